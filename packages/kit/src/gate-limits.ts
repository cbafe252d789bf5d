/**
 * A gate's connection admission (sshproxy, tlsgate): a token bucket per source IP (the SSH gate
 * defaults to about 1/s sustained, burst 120) and one global cap on concurrent connections. Applied before anything is read,
 * to every client including blocked ones.
 */
import type { Socket } from 'node:net'
import { normalizeIp } from './net.ts'
import { openFileLimit } from './open-files.ts'

/** A dotted quad without leading zeros: the kernel's text for an IPv4 peer, already canonical. */
const PLAIN_IPV4 = /^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/

/**
 * The client's address in canonical form (`::ffff:192.0.2.1` becomes `192.0.2.1`, IPv6 is
 * RFC 5952), the key of its rate budget, sightings and log lines. Plain IPv4 peers, nearly
 * every connection, skip the full parse (2-4 % of the reject path's CPU).
 */
export function clientIp(socket: Socket): string {
  const raw = socket.remoteAddress ?? ''
  if (PLAIN_IPV4.test(raw)) return raw
  try {
    return normalizeIp(raw)
  } catch {
    return raw
  }
}

interface Bucket {
  tokens: number
  updated: number
  /** Drops since the last RATELIMIT log line for this IP. */
  suppressed: number
  loggedAt: number
}

/** Forget buckets that have refilled completely; bounds memory under address scans. */
const MAX_BUCKETS = 200_000

export class SourceRateLimiter {
  readonly #rate: number
  readonly #burst: number
  readonly #buckets = new Map<string, Bucket>()
  readonly #now: () => number

  /** `ratePerSecond` tokens are added per second up to `burst`. */
  constructor(ratePerSecond: number, burst: number, now: () => number = performance.now.bind(performance)) {
    if (!(ratePerSecond > 0) || !(burst >= 1)) throw new TypeError('rate limiter needs a positive rate and burst')
    this.#rate = ratePerSecond / 1000
    this.#burst = burst
    this.#now = now
  }

  /**
   * Take a token for `ip`. Returns `{ ok: true }` or, when dropped, whether to log now (at
   * most once per 10 s per IP) and how many drops that line stands for.
   */
  take(ip: string): { ok: true } | { ok: false; log: boolean; dropped: number } {
    const now = this.#now()
    let b = this.#buckets.get(ip)
    if (!b) {
      if (this.#buckets.size >= MAX_BUCKETS) this.sweep()
      b = { tokens: this.#burst, updated: now, suppressed: 0, loggedAt: Number.NEGATIVE_INFINITY }
      this.#buckets.set(ip, b)
    } else {
      b.tokens = Math.min(this.#burst, b.tokens + (now - b.updated) * this.#rate)
      b.updated = now
    }
    if (b.tokens >= 1) {
      b.tokens -= 1
      return { ok: true }
    }
    b.suppressed++
    if (now - b.loggedAt >= 10_000) {
      const dropped = b.suppressed
      b.suppressed = 0
      b.loggedAt = now
      return { ok: false, log: true, dropped }
    }
    return { ok: false, log: false, dropped: 0 }
  }

  /** Remove buckets that are full again (their state equals a fresh bucket). */
  sweep(): void {
    const now = this.#now()
    for (const [ip, b] of this.#buckets) {
      if (b.tokens + (now - b.updated) * this.#rate >= this.#burst && b.suppressed === 0) this.#buckets.delete(ip)
    }
    // Still too many (a flood of distinct addresses): start over rather than grow without bound.
    if (this.#buckets.size >= MAX_BUCKETS) this.#buckets.clear()
  }

  get size(): number {
    return this.#buckets.size
  }
}

/** Counts open connections across all routes; `OVERLOAD` lines are logged at most once a second. */
export class ConnectionCap {
  readonly max: number
  active = 0
  #suppressed = 0
  #loggedAt = Number.NEGATIVE_INFINITY

  constructor(max: number) {
    this.max = max
  }

  tryAcquire(): { ok: true } | { ok: false; log: boolean; dropped: number } {
    if (this.active < this.max) {
      this.active++
      return { ok: true }
    }
    this.#suppressed++
    const now = performance.now()
    if (now - this.#loggedAt >= 1000) {
      const dropped = this.#suppressed
      this.#suppressed = 0
      this.#loggedAt = now
      return { ok: false, log: true, dropped }
    }
    return { ok: false, log: false, dropped: 0 }
  }

  release(): void {
    this.active--
  }
}

/**
 * Descriptors a gate holds besides its connections: its database and log files, listeners,
 * the metrics server, control-plane requests, Node's own (epoll, signals, threads): about 30 in
 * all, with room to spare.
 */
const RESERVED_DESCRIPTORS = 64

/**
 * Connections that fit in `limit` open files beside the gate's own: two sockets each, and two
 * pipes more while a splice helper relays one (at most `spliceHelpers` at once).
 */
function connectionsWithin(limit: number, spliceHelpers: number): number {
  const room = limit - RESERVED_DESCRIPTORS
  const beyondHelpers = Math.floor((room - 2 * spliceHelpers) / 2)
  return Math.max(1, beyondHelpers >= spliceHelpers ? beyondHelpers : Math.floor(room / 4))
}

/**
 * The connection cap that fits the open-file limit: each relayed connection holds two
 * descriptors (client and backend). Past the limit the kernel refuses accept(), and libuv then
 * closes the waiting connections unseen: no callback reaches Node, so they are neither logged
 * nor counted, and a gate that sees clients fail says nothing about why. Under a cap that fits,
 * the excess is refused as `OVERLOAD`, logged and counted, like any other overload. A lowered
 * cap is logged once at start with what to change.
 */
export function connectionCapWithinLimit(
  maxConnections: number,
  options: { spliceHelpers?: number; limit?: number | undefined; warn?: (fields: object, msg: string) => void } = {},
): number {
  const limit = 'limit' in options ? options.limit : openFileLimit()
  if (limit === undefined) return maxConnections
  const fits = connectionsWithin(limit, options.spliceHelpers ?? 0)
  if (fits >= maxConnections) return maxConnections
  options.warn?.(
    { max_connections: maxConnections, allowed: fits, open_file_limit: limit },
    `max_connections lowered to ${fits}: the open file limit (${limit}) leaves room for no more, at two per connection; raise it (LimitNOFILE= in a systemd unit, ulimit -n in a shell) to allow ${maxConnections}`,
  )
  return fits
}

/** The cap as `doctor` shows it: lowered, with why, when the open file limit is too low. */
export function describeConnectionCap(maxConnections: number, spliceHelpers: number, limit = openFileLimit()): string {
  const fits = connectionCapWithinLimit(maxConnections, { spliceHelpers, limit })
  return fits === maxConnections
    ? `${maxConnections} concurrent connections`
    : `${fits} concurrent connections (max_connections ${maxConnections}, lowered: the open file limit is ${limit})`
}
