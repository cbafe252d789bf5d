/**
 * Analytics in the store and out of it. Every instance folds its tick's hourly counts into the
 * store; the lease holder closes each hour once it is `graceMs` past its end, queues one record
 * per (host, site, hour) in the analytics outbox, and delivers the outbox to the output: a
 * local JSON-lines file (appended and fsynced before acknowledging) or an HTTPS endpoint with
 * its own bearer token (redirects refused). At-least-once; the record `id` is deterministic.
 */
import { closeSync, fsyncSync, openSync, writeSync } from 'node:fs'
import { createTlsAgent, requestNoRedirect } from '@gatehouse/kit'
import type { Outbox, Store } from '../store/store.ts'
import { HOUR_MS, type HourCounts, recordId } from './collector.ts'

export type AnalyticsOutput =
  | { kind: 'file'; path: string }
  | { kind: 'https'; url: string; token: string; ca?: Buffer }

export interface AnalyticsRecord {
  id: string
  host: string
  site: string
  /** Start of the hour, RFC 3339 UTC. */
  hour: string
  requests: number
  status: { '1xx': number; '2xx': number; '3xx': number; '4xx': number; '5xx': number }
  unique_visitors: number
  top_paths: Array<{ path: string; count: number }>
  bot_share: number
}

const TOP_PATHS = 10

function tag(ns: string, host: string, site: string, hour: number) {
  const t = `{${ns}|an|${host}|${site}|${hour}}`
  return { counts: `ws:an:${t}`, visitors: `ws:anv:${t}`, paths: `ws:anp:${t}` }
}

/** Fold a tick's hourly counts into the store and index the hours for the roll. */
export async function flushAnalytics(store: Store, ns: string, hours: HourCounts[]): Promise<void> {
  const index = `ws:{${ns}}:an:hours`
  await Promise.all(
    hours.map(async (h) => {
      const k = tag(ns, h.host, h.site, h.hour)
      const argv: (string | number)[] = [3 * HOUR_MS, h.requests, ...h.status, h.bots, h.visitors.size, ...h.visitors]
      for (const [p, n] of h.paths) argv.push(p, n)
      await store.cmd().wsAnalytics(k.counts, k.visitors, k.paths, ...argv)
      await store.redis.zadd(index, 'NX', h.hour, `${h.host}\t${h.site}\t${h.hour}`)
    }),
  )
}

/** Close every hour older than `now - graceMs` into a record in the analytics outbox. */
export async function closeHours(store: Store, ns: string, now: number, graceMs: number, max: number): Promise<number> {
  const index = `ws:{${ns}}:an:hours`
  const due = await store.redis.zrangebyscore(index, '-inf', now - HOUR_MS - graceMs, 'LIMIT', 0, 100)
  const outbox = store.outbox('analytics')
  for (const member of due) {
    const [host, site, hourText] = member.split('\t') as [string, string, string]
    const hour = Number(hourText)
    const k = tag(ns, host, site, hour)
    const [c, visitors, top] = await Promise.all([
      store.redis.hgetall(k.counts),
      store.redis.pfcount(k.visitors),
      store.redis.zrevrange(k.paths, 0, TOP_PATHS - 1, 'WITHSCORES'),
    ])
    const requests = Number(c.r ?? 0)
    const record: AnalyticsRecord = {
      id: recordId(host, site, hour),
      host,
      site,
      hour: new Date(hour).toISOString(),
      requests,
      status: {
        '1xx': Number(c.s1 ?? 0),
        '2xx': Number(c.s2 ?? 0),
        '3xx': Number(c.s3 ?? 0),
        '4xx': Number(c.s4 ?? 0),
        '5xx': Number(c.s5 ?? 0),
      },
      unique_visitors: visitors,
      top_paths: [],
      bot_share: requests === 0 ? 0 : Math.round((Number(c.b ?? 0) / requests) * 10_000) / 10_000,
    }
    for (let i = 0; i < top.length; i += 2) record.top_paths.push({ path: top[i]!, count: Number(top[i + 1]) })
    await outbox.add(record.id, record, max, now)
    await store.redis.zrem(index, member)
  }
  return due.length
}

/** Deliver queued records to the output; acknowledged only after the output took them. */
export class AnalyticsSender {
  readonly #output: AnalyticsOutput
  readonly #outbox: Outbox
  readonly #agent: ReturnType<typeof createTlsAgent> | undefined

  constructor(store: Store, output: AnalyticsOutput) {
    this.#output = output
    this.#outbox = store.outbox('analytics')
    this.#agent =
      output.kind === 'https'
        ? createTlsAgent({ ...(output.ca ? { ca: output.ca } : {}), connectTimeoutMs: 5000, requestTimeoutMs: 15000 })
        : undefined
  }

  /** Send one batch; returns how many records went out. Throws when the output refused. */
  async send(now: number): Promise<number> {
    const batch = await this.#outbox.peek<AnalyticsRecord>(100)
    if (batch.length === 0) return 0
    const records = batch.map((b) => b.payload)
    if (this.#output.kind === 'file') {
      const fd = openSync(this.#output.path, 'a', 0o640)
      try {
        writeSync(fd, records.map((r) => `${JSON.stringify(r)}\n`).join(''))
        fsyncSync(fd)
      } finally {
        closeSync(fd)
      }
    } else {
      await requestNoRedirect(this.#output.url, {
        method: 'POST',
        headers: { authorization: `Bearer ${this.#output.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ records }),
        dispatcher: this.#agent!,
        timeoutMs: 15_000,
      })
    }
    await this.#outbox.ack(
      batch.map((b) => b.id),
      now,
      48 * HOUR_MS,
    )
    return batch.length
  }

  async close(): Promise<void> {
    await this.#agent?.destroy().catch(() => {})
  }
}
