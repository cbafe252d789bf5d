/**
 * Prometheus metrics: one registry per app. The app's own metrics are prefixed with the app
 * (`dnsctl_`, `notify_`, ...); the standard process and Node.js runtime collectors keep
 * their usual names (`process_cpu_seconds_total`, `nodejs_heap_size_used_bytes`) so stock
 * dashboards and alerts for Node.js work unchanged. Labels never carry client addresses, fingerprints,
 * tokens or user names.
 */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client'

export { Counter, Gauge, Histogram, Registry } from 'prom-client'

export interface AppMetrics {
  registry: Registry
  prefix: string
  counter<L extends string>(name: string, help: string, labelNames?: readonly L[]): Counter<L>
  /** `collect`, when given, sets the gauge's values at each scrape (a value read from state, not kept up to date). */
  gauge<L extends string>(
    name: string,
    help: string,
    labelNames?: readonly L[],
    collect?: (g: Gauge<L>) => void,
  ): Gauge<L>
  histogram<L extends string>(name: string, help: string, labelNames?: readonly L[], buckets?: number[]): Histogram<L>
}

/**
 * A registry with the runtime and process collectors and `<app>_build_info`.
 *
 * @example const m = createMetrics('sshproxy', '0.1.0'); const c = m.counter('connections_total', 'Accepted connections', ['route'])
 */
export function createMetrics(app: string, version = '0.0.0'): AppMetrics {
  if (!/^[a-z][a-z0-9_]*$/.test(app)) throw new TypeError(`metrics prefix ${app} must be snake_case`)
  const registry = new Registry()
  const prefix = `${app}_`
  collectDefaultMetrics({ register: registry })
  const metrics: AppMetrics = {
    registry,
    prefix,
    counter: (name, help, labelNames = []) =>
      new Counter({ name: prefix + name, help, labelNames: [...labelNames], registers: [registry] }),
    gauge: (name, help, labelNames = [], collect) =>
      new Gauge({
        name: prefix + name,
        help,
        labelNames: [...labelNames],
        registers: [registry],
        ...(collect
          ? {
              collect() {
                collect(this)
              },
            }
          : {}),
      }),
    histogram: (name, help, labelNames = [], buckets) =>
      new Histogram({
        name: prefix + name,
        help,
        labelNames: [...labelNames],
        registers: [registry],
        ...(buckets ? { buckets } : {}),
      }),
  }
  metrics
    .gauge('build_info', 'Build information; the value is always 1', ['version', 'node'])
    .set({ version, node: process.version }, 1)
  return metrics
}
