/**
 * The optional Prometheus upstream of the metrics history: dnsctl itself asks Prometheus's
 * `/api/v1/query_range` for the four fixed series, with fixed PromQL over kresd's metric names
 * (those of kresd's http module: `answer_total`, `answer_cached`, `answer_nxdomain`,
 * `cache_count_entries`, with the configured prefix and label matchers). Callers still only name
 * a range. One step per point, as many points as the embedded store; bounded time and size;
 * the four series in one query, so they are evaluated on one snapshot of Prometheus's data;
 * an unreachable, slow or failing Prometheus is an error (502/504), never a silent switch to
 * other data.
 */
import { HttpClientError, requestNoRedirect } from '@gatehouse/kit/http-client.ts'
import { errors } from '../errors.ts'
import type { HistoryPoint } from './service.ts'

/** Largest query_range answer read (a 7-day series is 169 points, ~10 KiB). */
export const MAX_RESPONSE_BYTES = 1024 * 1024

export type SeriesName = 'query_rate' | 'cache_hit_ratio' | 'nxdomain_rate' | 'cache_entries'

export interface PrometheusOptions {
  /** Base URL, e.g. `http://127.0.0.1:9090` (a path prefix is kept). */
  url: string
  /** Label matchers added to every series, e.g. `job="kresd"` (validated by the config). */
  selector: string
  /** kresd's http.prometheus.namespace. */
  prefix: string
  timeoutMs: number
}

/**
 * The fixed PromQL of each series. Counters are summed over every kresd process (each has its
 * own series); the cache is shared by the processes, so its entry count is the largest one,
 * the last sampled in the step.
 */
export function fixedQueries(prefix: string, selector: string, windowSeconds: number): Record<SeriesName, string> {
  const m = (name: string) => `${prefix}${name}{${selector.trim()}}`
  const rate = (name: string) => `sum(rate(${m(name)}[${windowSeconds}s]))`
  return {
    query_rate: rate('answer_total'),
    cache_hit_ratio: `${rate('answer_cached')} / ${rate('answer_total')}`,
    nxdomain_rate: rate('answer_nxdomain'),
    // The last sample in each step (a range selection skips the stale marker a failed scrape leaves).
    cache_entries: `max(last_over_time(${m('cache_count_entries')}[${windowSeconds}s]))`,
  }
}

/**
 * The four fixed series as one PromQL expression, each tagged with a `series` label. One query is
 * one evaluation over one snapshot of the TSDB: four separate queries could each see a scrape the
 * others did not, and the rates of one point would then be extrapolated over different samples.
 */
export function combinedQuery(prefix: string, selector: string, windowSeconds: number): string {
  const queries = fixedQueries(prefix, selector, windowSeconds)
  return (Object.keys(queries) as SeriesName[])
    .map((name) => `label_replace(${queries[name]}, "series", "${name}", "", "")`)
    .join(' or ')
}

const SERIES_NAMES: ReadonlySet<string> = new Set<SeriesName>([
  'query_rate',
  'cache_hit_ratio',
  'nxdomain_rate',
  'cache_entries',
])

interface MatrixAnswer {
  status?: unknown
  errorType?: unknown
  error?: unknown
  data?: { resultType?: unknown; result?: unknown }
}

export class PrometheusUpstream {
  readonly options: PrometheusOptions
  readonly endpoint: string
  readonly origin: string

  constructor(options: PrometheusOptions) {
    this.options = options
    this.endpoint = `${options.url.replace(/\/+$/, '')}/api/v1/query_range`
    this.origin = new URL(options.url).origin
  }

  /**
   * The points of the last `seconds`, one per `step`: evaluated at `now` and every step before
   * it, each over the step that ends there (a point's time is the start of its step, as in the
   * embedded store). Steps without samples are left out.
   */
  async points(seconds: number, step: number, now: Date): Promise<HistoryPoint[]> {
    // The last step ends at the current second (rounded up: samples scraped this second count).
    const end = Math.ceil(now.getTime() / 1000)
    const count = Math.floor(seconds / step)
    const start = end - (count - 1) * step
    const byName = await this.#range(
      combinedQuery(this.options.prefix, this.options.selector, step),
      start,
      end,
      step,
      count,
    )
    const points: HistoryPoint[] = []
    for (const [t, rate] of byName.get('query_rate') ?? []) {
      if (rate === null) continue
      points.push({
        time: new Date((t - step) * 1000).toISOString(),
        query_rate: rate,
        cache_hit_ratio: byName.get('cache_hit_ratio')?.get(t) ?? null,
        nxdomain_rate: byName.get('nxdomain_rate')?.get(t) ?? null,
        cache_entries: byName.get('cache_entries')?.get(t) ?? null,
      })
    }
    return points.sort((a, b) => a.time.localeCompare(b.time))
  }

  /** The query_range call: series name → evaluation time → value (null for NaN/Inf, e.g. 0/0). */
  async #range(query: string, start: number, end: number, step: number, count: number) {
    const timeoutS = Math.max(1, Math.floor(this.options.timeoutMs / 1000))
    const body = new URLSearchParams({
      query,
      start: String(start),
      end: String(end),
      step: `${step}s`,
      timeout: `${timeoutS}s`,
    }).toString()
    let res: Awaited<ReturnType<typeof requestNoRedirect>>
    try {
      res = await requestNoRedirect(this.endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body,
        timeoutMs: this.options.timeoutMs,
        maxBytes: MAX_RESPONSE_BYTES,
        accept: () => true,
      })
    } catch (err) {
      throw this.#clientError(err)
    }
    let answer: MatrixAnswer
    try {
      answer = res.json<MatrixAnswer>()
    } catch {
      throw errors.metrics_upstream_unavailable(
        `Prometheus at ${this.origin} answered ${res.status} with a body that is not JSON (is the URL a Prometheus?)`,
      )
    }
    if (res.status !== 200 || answer?.status !== 'success') {
      const why =
        typeof answer?.error === 'string'
          ? ` (${typeof answer.errorType === 'string' ? `${answer.errorType}: ` : ''}${answer.error.slice(0, 300)})`
          : ''
      throw errors.metrics_upstream_unavailable(
        `Prometheus at ${this.origin} answered ${res.status} to the history query${why}`,
      )
    }
    const result = answer.data?.result
    if (answer.data?.resultType !== 'matrix' || !Array.isArray(result) || result.length > SERIES_NAMES.size) {
      throw this.#shape('one range series per name')
    }
    const byName = new Map<SeriesName, Map<number, number | null>>()
    for (const series of result as { metric?: { series?: unknown }; values?: unknown }[]) {
      const name = series?.metric?.series
      if (typeof name !== 'string' || !SERIES_NAMES.has(name) || byName.has(name as SeriesName)) {
        throw this.#shape('one range series per name')
      }
      if (!Array.isArray(series.values) || series.values.length > count + 1) throw this.#shape('its values')
      const values = new Map<number, number | null>()
      for (const pair of series.values) {
        if (!Array.isArray(pair) || typeof pair[0] !== 'number' || typeof pair[1] !== 'string') {
          throw this.#shape('[time, "value"] pairs')
        }
        const v = Number(pair[1])
        values.set(Math.round(pair[0]), Number.isFinite(v) ? v : null)
      }
      byName.set(name as SeriesName, values)
    }
    return byName
  }

  #shape(what: string) {
    return errors.metrics_upstream_unavailable(
      `Prometheus at ${this.origin} answered the history query with something other than ${what}`,
    )
  }

  #clientError(err: unknown) {
    if (err instanceof HttpClientError) {
      if (err.code === 'network' && err.timedOut) {
        return errors.metrics_upstream_timeout(
          `Prometheus at ${this.origin} did not answer within ${this.options.timeoutMs} ms`,
        )
      }
      if (err.code === 'too_large') {
        return errors.metrics_upstream_unavailable(
          `Prometheus at ${this.origin} answered more than ${MAX_RESPONSE_BYTES} bytes; refused`,
        )
      }
      return errors.metrics_upstream_unavailable(`Prometheus at ${this.origin} is unreachable: ${err.message}`)
    }
    return errors.metrics_upstream_unavailable(`Prometheus at ${this.origin} failed: ${(err as Error).message}`)
  }
}
