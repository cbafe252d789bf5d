/**
 * The gate's Prometheus metrics (prefix `tlsgate_`). The route label is the configured listen
 * address; client addresses, fingerprints and SNIs are never labels.
 */
import type { AppMetrics, Counter, Gauge } from '@gatehouse/kit/metrics.ts'

export const RESULTS = [
  'allowed',
  'bypassed',
  'refused_blocked',
  'refused_unknown',
  'refused_pending',
  'ratelimit',
  'overload',
  'backend_error',
  'not_tls',
  'protocol_error',
  'hello_timeout',
  'client_closed',
  'store_error',
  /** SMTP routes: a session that ended without STARTTLS. */
  'plaintext',
] as const

export type Result = (typeof RESULTS)[number]

type CounterChild = ReturnType<Counter<'route'>['labels']>
type GaugeChild = ReturnType<Gauge<'route'>['labels']>

/** One route's series, bound once: no label hashing per connection. */
export interface RouteMetrics {
  connections: CounterChild
  active: GaugeChild
  results: Record<Result, CounterChild>
  up: CounterChild
  down: CounterChild
}

export function createRouteMetrics(metrics: AppMetrics, routes: readonly string[]): Map<string, RouteMetrics> {
  const connections = metrics.counter('connections_total', 'TCP connections accepted', ['route'])
  const active = metrics.gauge('active_connections', 'Connections open now (hello or relay)', ['route'])
  const results = metrics.counter('connection_results_total', 'How connections ended up, by result', [
    'route',
    'result',
  ])
  const bytes = metrics.counter('proxied_bytes_total', 'Bytes relayed between clients and the backend', [
    'route',
    'direction',
  ])
  const out = new Map<string, RouteMetrics>()
  for (const route of routes) {
    // Every series starts at zero so dashboards see them before the first event.
    const m: RouteMetrics = {
      connections: connections.labels({ route }),
      active: active.labels({ route }),
      results: Object.fromEntries(RESULTS.map((result) => [result, results.labels({ route, result })])) as Record<
        Result,
        CounterChild
      >,
      up: bytes.labels({ route, direction: 'client_to_backend' }),
      down: bytes.labels({ route, direction: 'backend_to_client' }),
    }
    m.connections.inc(0)
    m.active.set(0)
    for (const r of RESULTS) m.results[r].inc(0)
    m.up.inc(0)
    m.down.inc(0)
    out.set(route, m)
  }
  return out
}
