/**
 * In-memory pre-aggregation: lines are folded into per-(host, site, IP, window) counters
 * and handed to the store once per tick, so the store sees one call per key per tick,
 * never one per line. The raw target and user agent stop here.
 */
import { normalizeIp } from '@gatehouse/kit'
import type { LogRequest } from '../logs/request.ts'
import { decodeForMatch, isStaticAsset, pathHash, pathOf } from './classify.ts'
import type { SuspiciousMatcher } from './patterns.ts'

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

/**
 * The aggregates of one (host, site, window) in this tick, by client IP. The map holds each
 * aggregate under its normalised IP and, when the log wrote the address another way
 * (`::ffff:1.2.3.4`, upper-case IPv6), under that raw text too, so a line costs one lookup of
 * the text as logged; raw text that is not an address maps to null.
 */
interface Scope {
  host: string
  site: string
  windowStart: number
  byIp: Map<string, Aggregate | null>
}

export class WindowAggregator {
  readonly windowMs: number
  readonly #suspicious: SuspiciousMatcher
  // Per line the work is a few map lookups: no composite key string is built (building and
  // hashing one per line cost more than parsing the line). The last scope is remembered
  // because consecutive lines almost always share host, site and window.
  #scopes = new Map<string, Scope>()
  #last: Scope | undefined
  #size = 0
  #rejected = 0
  // Parsing an address (ipaddr.js) and matching the pattern lists cost more than the rest of a
  // line; both are cached for the tick (memory only, cleared at every drain).
  #ips = new Map<string, string | null>()
  #targets = new Map<string, TargetFacts>()

  constructor(windowMs: number, suspicious: SuspiciousMatcher) {
    this.windowMs = windowMs
    this.#suspicious = suspicious
  }

  /** Aggregates pending since the last drain. */
  get size(): number {
    return this.#size
  }

  /**
   * Fold one request; returns the normalised client IP, or undefined when it is not an IP
   * address (the line counts as unmatched).
   */
  add(req: LogRequest, site: string, host: string, nowMs: number): string | undefined {
    const t = Number.isFinite(req.timeMs) ? req.timeMs : nowMs
    const windowStart = t - (t % this.windowMs)
    let scope = this.#last
    if (scope === undefined || scope.windowStart !== windowStart || scope.host !== host || scope.site !== site) {
      scope = this.#scope(host, site, windowStart)
    }
    let a = scope.byIp.get(req.ip)
    if (a === undefined) a = this.#aggregate(scope, req.ip, t)
    if (a === null) return undefined
    a.requests++
    if (t > a.lastSeenMs) a.lastSeenMs = t
    if (req.status < 400) a.successes++
    let facts = this.#targets.get(req.target)
    if (facts === undefined) {
      const path = pathOf(req.target)
      facts = {
        statik: isStaticAsset(path),
        hash: pathHash(path),
        // Traversal and injection probes often live in the query string: the lists that say so
        // see it; the others see the path alone, so `?x=1` hides nothing from an anchored pattern.
        suspicious: this.#suspicious.test(
          decodeForMatch(path),
          path.length === req.target.length ? undefined : decodeForMatch(req.target),
        ),
      }
      if (this.#targets.size < MAX_CACHED) this.#targets.set(req.target, facts)
    }
    if (!facts.statik) {
      a.nonStatic++
      if (req.status >= 400) a.errors++
      if (a.paths.size < MAX_PATHS_PER_TICK) a.paths.add(facts.hash)
    }
    if (facts.suspicious) a.suspicious++
    return a.ip
  }

  #scope(host: string, site: string, windowStart: number): Scope {
    const key = `${host}\t${site}\t${windowStart}`
    let scope = this.#scopes.get(key)
    if (scope === undefined) {
      scope = { host, site, windowStart, byIp: new Map() }
      this.#scopes.set(key, scope)
    }
    this.#last = scope
    return scope
  }

  /** First sight of this IP text in the scope this tick: normalise it and find or create its aggregate. */
  #aggregate(scope: Scope, raw: string, t: number): Aggregate | null {
    let ip = this.#ips.get(raw)
    if (ip === undefined) {
      try {
        ip = normalizeIp(raw)
      } catch {
        ip = null
      }
      if (this.#ips.size < MAX_CACHED) this.#ips.set(raw, ip)
    }
    if (ip === null) {
      // Bounded like the caches: a flood of garbage addresses cannot grow the map without limit.
      if (this.#rejected < MAX_CACHED) {
        this.#rejected++
        scope.byIp.set(raw, null)
      }
      return null
    }
    let a = ip === raw ? undefined : scope.byIp.get(ip)
    if (a === undefined || a === null) {
      a = {
        host: scope.host,
        site: scope.site,
        ip,
        windowStart: scope.windowStart,
        requests: 0,
        errors: 0,
        successes: 0,
        nonStatic: 0,
        suspicious: 0,
        paths: new Set(),
        lastSeenMs: t,
      }
      scope.byIp.set(ip, a)
      this.#size++
    }
    if (ip !== raw) scope.byIp.set(raw, a)
    return a
  }

  /**
   * Fold aggregates back in (a flush that failed): they merge with what arrived since, so a
   * store outage holds one aggregate per client and window, not one per client and tick.
   */
  restore(aggregates: Aggregate[]): void {
    for (const r of aggregates) {
      const scope = this.#scope(r.host, r.site, r.windowStart)
      const a = scope.byIp.get(r.ip)
      if (a === undefined || a === null) {
        scope.byIp.set(r.ip, r)
        this.#size++
        continue
      }
      a.requests += r.requests
      a.errors += r.errors
      a.successes += r.successes
      a.nonStatic += r.nonStatic
      a.suspicious += r.suspicious
      for (const h of r.paths) if (a.paths.size < MAX_PATHS_PER_TICK) a.paths.add(h)
      if (r.lastSeenMs > a.lastSeenMs) a.lastSeenMs = r.lastSeenMs
    }
  }

  /** Take everything folded since the last drain. */
  drain(): Aggregate[] {
    const out: Aggregate[] = []
    for (const scope of this.#scopes.values()) {
      // An aggregate also listed under its raw spelling is taken once, under its own IP.
      for (const [k, a] of scope.byIp) if (a !== null && k === a.ip) out.push(a)
    }
    this.#scopes = new Map()
    this.#last = undefined
    this.#size = 0
    this.#rejected = 0
    this.#ips = new Map()
    this.#targets = new Map()
    return out
  }
}
