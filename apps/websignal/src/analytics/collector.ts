/**
 * Hourly analytics per host and site, pre-aggregated in memory per tick: requests, status
 * classes, bots, unique visitors and top paths. A visitor is HMAC-SHA256 over (IP, user agent,
 * host) under a key derived from the configured secret, the pipeline id and the UTC day:
 * neither IP nor user agent is stored, and rotating the secret breaks visitor continuity.
 * Paths are kept without their query string and with id-like segments collapsed to `:id`.
 */
import { createHash, createHmac, createSecretKey, hkdfSync, type KeyObject } from 'node:crypto'
import { pathOf } from '../detect/classify.ts'

export const HOUR_MS = 3600_000

export interface HourCounts {
  host: string
  site: string
  hour: number
  requests: number
  /** Index 0..4: 1xx..5xx. */
  status: [number, number, number, number, number]
  bots: number
  /** Visitor hashes seen this tick (hex, truncated). */
  visitors: Set<string>
  /** Normalised path -> count this tick. */
  paths: Map<string, number>
}

const BOT = /bot|crawl|spider|slurp|curl|wget|python-requests|go-http-client|httpclient|scrapy|headless/i
const ID_SEGMENT =
  /^(?:\d+|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{16,}|[A-Za-z0-9_-]{22,})$/i
const MAX_PATHS_PER_HOUR_TICK = 1000
const MAX_PATH_LENGTH = 200

/** `/users/123/orders/9f86d081884c7d65?x=1` -> `/users/:id/orders/:id`. */
export function normalizePath(target: string): string {
  const path = pathOf(target)
  const out = path
    .split('/')
    .map((seg) => (ID_SEGMENT.test(seg) ? ':id' : seg))
    .join('/')
  return out.length > MAX_PATH_LENGTH ? `${out.slice(0, MAX_PATH_LENGTH)}…` : out
}

export class VisitorKeys {
  readonly #secret: string
  readonly #pipeline: string
  #day = -1
  // A KeyObject: an HMAC under a raw Buffer key imports the key again for every call.
  #key: KeyObject | undefined

  constructor(secret: string, pipelineId: string) {
    this.#secret = secret
    this.#pipeline = pipelineId
  }

  /** The visitor id of (ip, user agent, host) in the UTC day of `timeMs`. */
  visitor(ip: string, userAgent: string, host: string, timeMs: number): string {
    const day = Math.floor(timeMs / 86_400_000)
    if (day !== this.#day) {
      this.#key = createSecretKey(
        Buffer.from(hkdfSync('sha256', this.#secret, this.#pipeline, `websignal visitors day ${day}`, 32)),
      )
      this.#day = day
    }
    return createHmac('sha256', this.#key!).update(`${ip}\n${userAgent}\n${host}`).digest('hex').slice(0, 24)
  }
}

/** Per-tick memo bounds (entries): beyond them values are computed without memoising. */
const MAX_MEMO = 100_000

/** Client IP -> user agent -> whether it is a bot, for one (host, site, hour) in this tick. */
type Clients = Map<string, Map<string, boolean>>

export class AnalyticsCollector {
  readonly #keys: VisitorKeys
  #pending = new Map<string, HourCounts>()
  #last: HourCounts | undefined
  // A visitor's HMAC and the bot test cost more than the rest of a line, and a visitor sends
  // many requests a tick: a (host, site, hour)'s clients are remembered for the tick, so a
  // client's later lines only count (its visitor hash is already in the hour's set). Paths'
  // normalisation likewise. Memory only, cleared at every drain.
  #clients = new Map<HourCounts, Clients>()
  #lastClients: Clients = new Map()
  #memoSize = 0
  #paths = new Map<string, string>()

  constructor(keys: VisitorKeys) {
    this.#keys = keys
  }

  add(ip: string, host: string, site: string, target: string, status: number, userAgent: string, timeMs: number): void {
    const hour = timeMs - (timeMs % HOUR_MS)
    let h = this.#last
    if (h === undefined || h.hour !== hour || h.host !== host || h.site !== site) {
      const k = `${host}\t${site}\t${hour}`
      h = this.#pending.get(k)
      if (!h) {
        h = { host, site, hour, requests: 0, status: [0, 0, 0, 0, 0], bots: 0, visitors: new Set(), paths: new Map() }
        this.#pending.set(k, h)
      }
      this.#last = h
      let clients = this.#clients.get(h)
      if (clients === undefined) {
        clients = new Map()
        this.#clients.set(h, clients)
      }
      this.#lastClients = clients
    }
    h.requests++
    const cls = Math.floor(status / 100) - 1
    if (cls >= 0 && cls < 5) h.status[cls as 0]++
    let agents = this.#lastClients.get(ip)
    let bot = agents?.get(userAgent)
    if (bot === undefined) {
      bot = BOT.test(userAgent)
      h.visitors.add(this.#keys.visitor(ip, userAgent, host, timeMs))
      if (this.#memoSize < MAX_MEMO) {
        if (agents === undefined) {
          agents = new Map()
          this.#lastClients.set(ip, agents)
        }
        agents.set(userAgent, bot)
        this.#memoSize++
      }
    }
    if (bot) h.bots++
    let p = this.#paths.get(target)
    if (p === undefined) {
      p = normalizePath(target)
      if (this.#paths.size < MAX_MEMO) this.#paths.set(target, p)
    }
    const n = h.paths.get(p)
    if (n !== undefined) h.paths.set(p, n + 1)
    else if (h.paths.size < MAX_PATHS_PER_HOUR_TICK) h.paths.set(p, 1)
  }

  drain(): HourCounts[] {
    const out = [...this.#pending.values()]
    this.#pending = new Map()
    this.#last = undefined
    this.#clients = new Map()
    this.#lastClients = new Map()
    this.#memoSize = 0
    this.#paths = new Map()
    return out
  }
}

/** The analytics record id: deterministic per (host, site, hour), so a resend is recognisable. */
export function recordId(host: string, site: string, hour: number): string {
  return `wa-${createHash('sha256').update(`${host}\n${site}\n${hour}`).digest('hex').slice(0, 40)}`
}
