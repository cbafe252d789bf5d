/**
 * Query analytics from the resolver's dnstap stream (client responses only: one per query).
 * Kept in memory, bounded whatever arrives: 5-minute buckets for the last 24 h and hourly ones
 * for 7 days, each with bounded rankings (TopK) of domains, clients and query types; in the
 * detailed mode also a ring of the newest 1,000 queries. Restarting dnsctl starts empty.
 *
 * Privacy modes (DNSCTL_ANALYTICS_PRIVACY):
 *   off        nothing is recorded; the endpoint answers empty totals
 *   aggregate  (default) clients are recorded as their network only: IPv4 /24, IPv6 /48
 *   detailed   full client addresses, and the newest queries (time, client, name, type, rcode)
 */
import { type DnstapMessage, MESSAGE_CLIENT_RESPONSE } from './dnstap.ts'
import { summariseResponse } from './response.ts'
import { TopK } from './topk.ts'

export const PRIVACY_MODES = ['off', 'aggregate', 'detailed'] as const
export type PrivacyMode = (typeof PRIVACY_MODES)[number]
export const RANGES = { '1h': 3600, '6h': 6 * 3600, '24h': 86400, '7d': 7 * 86400 } as const
export type AnalyticsRange = keyof typeof RANGES

const FINE = { seconds: 300, keep: 86400 / 300 }
const COARSE = { seconds: 3600, keep: (7 * 86400) / 3600 }
/** Keys kept per ranking and bucket: twice the largest `limit` for sound counts at the top. */
export const RANKING_CAPACITY = 200
export const RECENT_CAPACITY = 1000

const TYPE_NAMES: Record<number, string> = {
  1: 'A',
  2: 'NS',
  5: 'CNAME',
  6: 'SOA',
  12: 'PTR',
  15: 'MX',
  16: 'TXT',
  28: 'AAAA',
  33: 'SRV',
  35: 'NAPTR',
  43: 'DS',
  48: 'DNSKEY',
  64: 'SVCB',
  65: 'HTTPS',
  255: 'ANY',
  257: 'CAA',
}
const RCODES = ['NOERROR', 'FORMERR', 'SERVFAIL', 'NXDOMAIN', 'NOTIMP', 'REFUSED']

class Bucket {
  readonly start: number
  total = 0
  blocked = 0
  readonly domains = new TopK(RANKING_CAPACITY)
  readonly clients = new TopK(RANKING_CAPACITY)
  readonly types = new TopK(RANKING_CAPACITY)
  constructor(start: number) {
    this.start = start
  }
}

interface Recent {
  time: string
  client: string
  name: string
  type: string
  rcode: string
  blocked: boolean
}

/** The client as the privacy mode allows it to be stored. */
export function clientKey(address: Uint8Array | undefined, mode: PrivacyMode): string {
  if (!address) return 'unknown'
  if (address.length === 4) {
    return mode === 'detailed' ? address.join('.') : `${address[0]}.${address[1]}.${address[2]}.0/24`
  }
  if (address.length === 16) {
    const groups: string[] = []
    for (let i = 0; i < 16; i += 2) groups.push(((address[i]! << 8) | address[i + 1]!).toString(16))
    return mode === 'detailed' ? groups.join(':') : `${groups.slice(0, 3).join(':')}::/48`
  }
  return 'unknown'
}

export class AnalyticsService {
  readonly mode: PrivacyMode
  readonly now: () => Date
  readonly #fine: Bucket[] = []
  readonly #coarse: Bucket[] = []
  readonly #recent: Recent[] = []
  #recentNext = 0
  /** Frames that were not dnstap client responses we could read. */
  skipped = 0

  constructor(mode: PrivacyMode, now: () => Date) {
    this.mode = mode
    this.now = now
  }

  #bucket(list: Bucket[], seconds: number, keep: number, at: number): Bucket {
    const start = Math.floor(at / seconds) * seconds
    const last = list.at(-1)
    if (last && last.start === start) return last
    // Late frames (behind the newest bucket) count in the newest one.
    if (last && last.start > start) return last
    const b = new Bucket(start)
    list.push(b)
    while (list.length > 0 && list[0]!.start <= start - keep * seconds) list.shift()
    return b
  }

  ingest(message: DnstapMessage | undefined): void {
    if (this.mode === 'off') return
    if (!message || message.type !== MESSAGE_CLIENT_RESPONSE || !message.responseMessage) {
      this.skipped++
      return
    }
    const r = summariseResponse(message.responseMessage)
    if (!r) {
      this.skipped++
      return
    }
    const at = Math.floor(this.now().getTime() / 1000)
    const client = clientKey(message.queryAddress, this.mode)
    const type = TYPE_NAMES[r.type] ?? `TYPE${r.type}`
    for (const b of [
      this.#bucket(this.#fine, FINE.seconds, FINE.keep, at),
      this.#bucket(this.#coarse, COARSE.seconds, COARSE.keep, at),
    ]) {
      b.total++
      if (r.blocked) b.blocked++
      b.domains.add(r.name)
      b.clients.add(client)
      b.types.add(type)
    }
    if (this.mode === 'detailed') {
      const entry = {
        time: new Date(at * 1000).toISOString(),
        client,
        name: r.name,
        type,
        rcode: RCODES[r.rcode] ?? `RCODE${r.rcode}`,
        blocked: r.blocked,
      }
      if (this.#recent.length < RECENT_CAPACITY) this.#recent.push(entry)
      else this.#recent[this.#recentNext] = entry
      this.#recentNext = (this.#recentNext + 1) % RECENT_CAPACITY
    }
  }

  /** Keys held in memory across all buckets (the bound the tests check). */
  heldKeys(): number {
    let n = this.#recent.length
    for (const b of [...this.#fine, ...this.#coarse])
      n += b.domains.counts.size + b.clients.counts.size + b.types.counts.size
    return n
  }

  snapshot(range: AnalyticsRange, limit: number, recent: number) {
    const to = Math.floor(this.now().getTime() / 1000)
    const from = to - RANGES[range]
    const list = range === '7d' ? this.#coarse : this.#fine
    const width = range === '7d' ? COARSE.seconds : FINE.seconds
    const domains = new TopK(Number.POSITIVE_INFINITY)
    const clients = new TopK(Number.POSITIVE_INFINITY)
    const types = new TopK(Number.POSITIVE_INFINITY)
    let total = 0
    let blocked = 0
    for (const b of list) {
      if (b.start + width <= from) continue
      total += b.total
      blocked += b.blocked
      domains.merge(b.domains)
      clients.merge(b.clients)
      types.merge(b.types)
    }
    const ranking = (k: TopK, key: string) => ({
      items: k.top(limit).map((e) => ({ [key]: e.key, count: e.count })),
      truncated: k.truncated || k.counts.size > limit,
    })
    const ordered =
      this.#recent.length < RECENT_CAPACITY
        ? this.#recent
        : [...this.#recent.slice(this.#recentNext), ...this.#recent.slice(0, this.#recentNext)]
    return {
      privacy_mode: this.mode,
      range,
      from: new Date(from * 1000).toISOString(),
      to: new Date(to * 1000).toISOString(),
      totals: { queries: total, blocked },
      blocked_percent: total === 0 ? 0 : (100 * blocked) / total,
      domains: ranking(domains, 'domain'),
      clients: ranking(clients, 'client'),
      query_types: ranking(types, 'type'),
      ...(this.mode === 'detailed'
        ? {
            recent_queries: ordered
              .filter((q) => Date.parse(q.time) / 1000 >= from)
              .slice(-recent)
              .reverse()
              .slice(0, recent),
          }
        : {}),
    }
  }
}
