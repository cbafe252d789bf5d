/**
 * The kit's per-request HTTP metrics, `<app>_http_requests_total` (method, route, status) and
 * `<app>_http_request_duration_seconds` (method, route), tallied in plain numbers per series
 * and turned into Prometheus values only when the registry is read.
 *
 * prom-client's own `inc` and `observe` validate and hash the labels and find the bucket by a
 * float-keyed property on every call, bound label children included: in a profile of the
 * artsvc content lane they were 6.6 % of the server's busy time, and without them its CPU per
 * request fell 12-20 % (docs/performance/kit.md). Here a request costs a map lookup, two
 * additions and a walk of twelve bounds. The two metrics are registered in the app's registry as objects with the
 * `get()` prom-client's registry reads, so the exposition is the same as prom-client's
 * Counter and Histogram give.
 */
import type { Metric } from 'prom-client'
import type { AppMetrics } from './metrics.ts'

/** One method, route and status: what a request adds to. */
interface RequestSeries {
  record(seconds: number): void
}

type CountLabels = { method: string; route: string; status: number }
type DurationLabels = { method: string; route: string }

interface Durations {
  labels: DurationLabels
  /** Requests per bucket, not cumulative; the last one is above every bound (+Inf). */
  buckets: Float64Array
  sum: number
  count: number
}

interface Count {
  labels: CountLabels
  value: number
}

/** A metric as prom-client's registry formats it (the result of a metric's `get()`). */
interface Exposition {
  name: string
  help: string
  type: 'counter' | 'histogram'
  aggregator: 'sum'
  values: Array<{ metricName?: string; labels: Record<string, string | number>; value: number }>
}

const REQUESTS_HELP = 'HTTP requests answered'
const DURATIONS_HELP = 'Time to answer HTTP requests'

export class HttpRequestMetrics {
  readonly #bounds: readonly number[]
  readonly #series = new Map<string, RequestSeries>()
  readonly #counts: Count[] = []
  readonly #durations = new Map<string, Durations>()

  constructor(metrics: AppMetrics, buckets: readonly number[]) {
    if (buckets.some((b, i) => !Number.isFinite(b) || (i > 0 && b <= buckets[i - 1]!)))
      throw new TypeError('HttpRequestMetrics: buckets must be finite and increasing')
    this.#bounds = [...buckets]
    const requests = `${metrics.prefix}http_requests_total`
    const durations = `${metrics.prefix}http_request_duration_seconds`
    // What prom-client's registry reads of a metric: its name, `get()` and `reset()`.
    const reset = () => this.reset()
    metrics.registry.registerMetric({
      name: requests,
      get: async () => this.#countValues(requests),
      reset,
    } as unknown as Metric)
    metrics.registry.registerMetric({
      name: durations,
      get: async () => this.#durationValues(durations),
      reset,
    } as unknown as Metric)
  }

  /** Count one request to `route` that took `seconds`. */
  record(method: string, route: string, status: number, seconds: number): void {
    const key = `${method} ${route} ${status}`
    let series = this.#series.get(key)
    if (series === undefined) {
      series = this.#newSeries(method, route, status)
      this.#series.set(key, series)
    }
    series.record(seconds)
  }

  /** Forget every series, as prom-client's metrics do on `registry.resetMetrics()`. */
  reset(): void {
    this.#series.clear()
    this.#counts.length = 0
    this.#durations.clear()
  }

  #newSeries(method: string, route: string, status: number): RequestSeries {
    const count: Count = { labels: { method, route, status }, value: 0 }
    this.#counts.push(count)
    const durationKey = `${method} ${route}`
    let durations = this.#durations.get(durationKey)
    if (durations === undefined) {
      durations = { labels: { method, route }, buckets: new Float64Array(this.#bounds.length + 1), sum: 0, count: 0 }
      this.#durations.set(durationKey, durations)
    }
    const d = durations
    const bounds = this.#bounds
    return {
      record(seconds: number) {
        count.value++
        d.count++
        d.sum += seconds
        let i = 0
        while (i < bounds.length && seconds > bounds[i]!) i++
        d.buckets[i]!++
      },
    }
  }

  #countValues(name: string): Exposition {
    return {
      name,
      help: REQUESTS_HELP,
      type: 'counter',
      aggregator: 'sum',
      values: this.#counts.map((c) => ({ labels: { ...c.labels }, value: c.value })),
    }
  }

  #durationValues(name: string): Exposition {
    const values: Exposition['values'] = []
    for (const d of this.#durations.values()) {
      let cumulative = 0
      for (let i = 0; i <= this.#bounds.length; i++) {
        cumulative += d.buckets[i]!
        values.push({
          metricName: `${name}_bucket`,
          labels: { le: i < this.#bounds.length ? this.#bounds[i]! : '+Inf', ...d.labels },
          value: cumulative,
        })
      }
      values.push({ metricName: `${name}_sum`, labels: { ...d.labels }, value: d.sum })
      values.push({ metricName: `${name}_count`, labels: { ...d.labels }, value: d.count })
    }
    return { name, help: DURATIONS_HELP, type: 'histogram', aggregator: 'sum', values }
  }
}
