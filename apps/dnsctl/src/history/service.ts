/**
 * Metrics history: the spec's fixed series (query rate, cache-hit ratio, NXDOMAIN rate, cache
 * entries) over a named range, from the points the sampler stores, or from the optional
 * Prometheus upstream when one is configured. Callers name a range only; no metric names or
 * query language. Empty buckets are left out, never invented.
 */
import type { Kysely } from 'kysely'
import type { DB } from '../db/schema.ts'
import { type InstanceStats, readKresdStats } from '../resolver/stats.ts'
import type { PrometheusUpstream } from './prometheus.ts'
import { addDelta, readPoints } from './store.ts'

export const RANGES = {
  '1h': { seconds: 3600, resolution: 60, step: 60 },
  '6h': { seconds: 6 * 3600, resolution: 60, step: 300 },
  '24h': { seconds: 86400, resolution: 60, step: 900 },
  '7d': { seconds: 7 * 86400, resolution: 3600, step: 3600 },
} as const
export type Range = keyof typeof RANGES

export interface HistoryPoint {
  time: string
  /** Answers per second. */
  query_rate: number
  /** Share of answers served from the cache (null without answers). */
  cache_hit_ratio: number | null
  /** NXDOMAIN answers per second (null: the upstream had no such sample). */
  nxdomain_rate: number | null
  /** Entries in the resolver cache (null: the upstream had no such sample). */
  cache_entries: number | null
}

export class HistoryService {
  readonly db: Kysely<DB>
  readonly now: () => Date
  readonly controlDirs: readonly string[]
  /** When set, the history comes from Prometheus alone (and nothing is sampled into the store). */
  readonly upstream: PrometheusUpstream | undefined
  /** --resolver-sample-interval: how far apart the stored samples are meant to be. */
  readonly sampleIntervalMs: number
  #previous = new Map<string, InstanceStats>()
  #lastTick: number | undefined

  constructor(
    db: Kysely<DB>,
    controlDirs: readonly string[],
    now: () => Date,
    upstream?: PrometheusUpstream,
    sampleIntervalMs = 15_000,
  ) {
    this.db = db
    this.controlDirs = controlDirs
    this.now = now
    this.upstream = upstream
    this.sampleIntervalMs = sampleIntervalMs
  }

  async history(range: Range) {
    const r = RANGES[range]
    const now = this.now()
    const to = Math.floor(now.getTime() / 1000)
    const from = to - r.seconds
    const body = (source: 'embedded' | 'prometheus', points: HistoryPoint[]) => ({
      range,
      source,
      step_seconds: r.step,
      // How far apart samples are meant to be. A sampler slower than the step leaves steps
      // without a point that are not missing data: a chart bridges them (a client cannot tell
      // them from an outage otherwise). Prometheus answers one point per step.
      sample_seconds: source === 'embedded' ? this.sampleIntervalMs / 1000 : r.step,
      from: new Date(from * 1000).toISOString(),
      to: new Date(to * 1000).toISOString(),
      series: ['query_rate', 'cache_hit_ratio', 'nxdomain_rate', 'cache_entries'],
      points,
    })
    if (this.upstream) return body('prometheus', await this.upstream.points(r.seconds, r.step, now))
    const rows = await readPoints(this.db, r.resolution, Math.floor(from / r.resolution) * r.resolution)
    const groups = new Map<
      number,
      { seconds: number; queries: number; cached: number; nxdomain: number; entries: number }
    >()
    for (const row of rows) {
      const key = Math.floor(row.bucket / r.step) * r.step
      const g = groups.get(key) ?? { seconds: 0, queries: 0, cached: 0, nxdomain: 0, entries: 0 }
      g.seconds += row.seconds
      g.queries += row.queries
      g.cached += row.cached
      g.nxdomain += row.nxdomain
      g.entries = row.cache_entries
      groups.set(key, g)
    }
    const points: HistoryPoint[] = [...groups.entries()].map(([bucket, g]) => ({
      time: new Date(bucket * 1000).toISOString(),
      query_rate: g.seconds > 0 ? g.queries / g.seconds : 0,
      cache_hit_ratio: g.queries > 0 ? g.cached / g.queries : null,
      nxdomain_rate: g.seconds > 0 ? g.nxdomain / g.seconds : 0,
      cache_entries: g.entries,
    }))
    return body('embedded', points)
  }

  /**
   * Sample the resolvers once and store the counters' growth since the previous sample. A
   * process seen for the first time only sets its baseline; a counter that went down means the
   * process restarted, and its current value is the growth.
   */
  async sample(stats?: InstanceStats[]): Promise<void> {
    const current = stats ?? (await readKresdStats(this.controlDirs))
    const at = this.now().getTime() / 1000
    const delta = { seconds: 0, queries: 0, cached: 0, nxdomain: 0, cacheEntries: 0 }
    let grew = false
    for (const s of current) {
      const prev = this.#previous.get(s.socket)
      this.#previous.set(s.socket, s)
      delta.cacheEntries = Math.max(delta.cacheEntries, s.cacheEntries)
      if (!prev) continue
      const restarted = s.queries < prev.queries
      delta.queries += restarted ? s.queries : s.queries - prev.queries
      delta.cached += restarted ? s.cached : Math.max(0, s.cached - prev.cached)
      delta.nxdomain += restarted ? s.nxdomain : Math.max(0, s.nxdomain - prev.nxdomain)
      grew = true
    }
    const last = this.#lastTick
    this.#lastTick = at
    if (!grew || last === undefined || at <= last) return
    delta.seconds = at - last
    await addDelta(this.db, Math.floor(at), delta)
  }
}
