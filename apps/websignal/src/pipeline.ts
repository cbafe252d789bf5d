/**
 * Inputs -> parser -> in-memory window aggregation. Used by `serve` (flushed to the store
 * each tick) and `replay` (evaluated in memory). Raw targets and user agents stop here.
 */
import type { AnalyticsCollector } from './analytics/collector.ts'
import type { InputConfig } from './config.ts'
import type { WindowAggregator } from './detect/window.ts'
import { makeParser } from './logs/parser.ts'
import type { LineParser } from './logs/request.ts'

/** What the signal schema accepts as a host; a log's vhost outside it falls back to the configured host. */
const HOST = /^[a-z0-9._:[\]-]{1,253}$/

export interface LineCounters {
  parsed(n: number): void
  unmatched(reason: 'no_match' | 'too_long' | 'bad_ip', n?: number): void
  observed(ms: number): void
}

export class InputPipeline {
  readonly input: InputConfig
  readonly #parse: LineParser
  readonly #agg: WindowAggregator
  readonly #counters: LineCounters
  readonly #fallbackHost: string
  readonly #analytics: AnalyticsCollector | undefined

  constructor(
    input: InputConfig,
    agg: WindowAggregator,
    counters: LineCounters,
    fallbackHost: string,
    analytics?: AnalyticsCollector,
  ) {
    this.#analytics = analytics
    this.input = input
    this.#parse = makeParser({ format: input.format, syslog: input.syslog, jsonFields: input.jsonFields })
    this.#agg = agg
    this.#counters = counters
    this.#fallbackHost = input.host ?? fallbackHost
  }

  /** Fold lines; `now` is used for lines whose time did not parse. */
  lines(lines: string[], now: number): void {
    let parsed = 0
    let unmatched = 0
    let badIp = 0
    let newest = 0
    const site = this.input.site
    for (const line of lines) {
      const req = this.#parse(line)
      if (req === undefined) {
        unmatched++
        continue
      }
      // The log's host (vhost / Host) wins; the configured one fills in when the log has none.
      const host = req.host !== undefined && HOST.test(req.host) ? req.host : this.#fallbackHost
      const ip = this.#agg.add(req, site, host, now)
      if (ip === undefined) {
        badIp++
        continue
      }
      this.#analytics?.add(
        ip,
        host,
        site,
        req.target,
        req.status,
        req.userAgent,
        Number.isFinite(req.timeMs) ? req.timeMs : now,
      )
      parsed++
      if (req.timeMs > newest) newest = req.timeMs
    }
    if (parsed) this.#counters.parsed(parsed)
    if (unmatched) this.#counters.unmatched('no_match', unmatched)
    if (badIp) this.#counters.unmatched('bad_ip', badIp)
    if (newest) this.#counters.observed(newest)
  }
}
