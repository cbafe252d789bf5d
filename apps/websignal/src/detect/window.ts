/**
 * In-memory pre-aggregation: lines are folded into per-(host, site, IP, window) counters
 * and handed to the store once per tick, so the store sees one call per key per tick,
 * never one per line. The raw target and user agent stop here.
 */
import { normalizeIp } from '@gatehouse/kit'
import type { LogRequest } from '../logs/request.ts'
import { decodeForMatch, isStaticAsset, pathHash, pathOf } from './classify.ts'

export interface Aggregate {
  host: string
  site: string
  ip: string
  /** Window start, epoch ms (windows are aligned to multiples of the window length). */
  windowStart: number
  /** Requests (the signal's `connections`). */
  requests: number
  /** 4xx/5xx answers to non-static paths (the signal's `errors`). */
  errors: number
  /** 1xx-3xx answers (the signal's `successes`). */
  successes: number
  /** Requests for non-static paths: the error ratio's denominator. */
  nonStatic: number
  /** Requests whose target matched a suspicious-URI list. */
  suspicious: number
  /** Hashes of distinct non-static paths seen in this tick (bounded). */
  paths: Set<number>
  lastSeenMs: number
}

/** At most this many path hashes per key per tick: enough for the distinct-path threshold. */
const MAX_PATHS_PER_TICK = 256

/** What a target means for the counters, cached per tick: busy sites repeat the same targets. */
interface TargetFacts {
  statik: boolean
  hash: number
  suspicious: boolean
}

/** Per-tick cache bounds (entries): beyond them lookups are computed without caching. */
const MAX_CACHED = 100_000

export class WindowAggregator {
  readonly windowMs: number
  readonly #suspicious: RegExp
  #pending = new Map<string, Aggregate>()
  // Parsing an address (ipaddr.js) and matching the pattern lists cost more than the rest of a
  // line; both are cached for the tick (memory only, cleared at every drain).
  #ips = new Map<string, string | null>()
  #targets = new Map<string, TargetFacts>()

  constructor(windowMs: number, suspicious: RegExp) {
    this.windowMs = windowMs
    this.#suspicious = suspicious
  }

  get size(): number {
    return this.#pending.size
  }

  /**
   * Fold one request; returns the normalised client IP, or undefined when it is not an IP
   * address (the line counts as unmatched).
   */
  add(req: LogRequest, site: string, host: string, nowMs: number): string | undefined {
    let ip = this.#ips.get(req.ip)
    if (ip === undefined) {
      try {
        ip = normalizeIp(req.ip)
      } catch {
        ip = null
      }
      if (this.#ips.size < MAX_CACHED) this.#ips.set(req.ip, ip)
    }
    if (ip === null) return undefined
    const t = Number.isFinite(req.timeMs) ? req.timeMs : nowMs
    const windowStart = t - (t % this.windowMs)
    const key = `${host}\t${site}\t${ip}\t${windowStart}`
    let a = this.#pending.get(key)
    if (a === undefined) {
      a = {
        host,
        site,
        ip,
        windowStart,
        requests: 0,
        errors: 0,
        successes: 0,
        nonStatic: 0,
        suspicious: 0,
        paths: new Set(),
        lastSeenMs: t,
      }
      this.#pending.set(key, a)
    }
    a.requests++
    if (t > a.lastSeenMs) a.lastSeenMs = t
    if (req.status < 400) a.successes++
    let facts = this.#targets.get(req.target)
    if (facts === undefined) {
      const path = pathOf(req.target)
      facts = {
        statik: isStaticAsset(path),
        hash: pathHash(path),
        // Traversal and backdoor probes often live in the query string: match the decoded target.
        suspicious: this.#suspicious.test(decodeForMatch(req.target)),
      }
      if (this.#targets.size < MAX_CACHED) this.#targets.set(req.target, facts)
    }
    if (!facts.statik) {
      a.nonStatic++
      if (req.status >= 400) a.errors++
      if (a.paths.size < MAX_PATHS_PER_TICK) a.paths.add(facts.hash)
    }
    if (facts.suspicious) a.suspicious++
    return ip
  }

  /** Take everything folded since the last drain. */
  drain(): Aggregate[] {
    const out = [...this.#pending.values()]
    this.#pending = new Map()
    this.#ips = new Map()
    this.#targets = new Map()
    return out
  }
}
