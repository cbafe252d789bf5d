/**
 * The shared store (Redis through ioredis; Sentinel via the `sentinels` option). Short
 * command timeouts: a stalled store fails calls fast, so a publisher whose lease cannot be
 * renewed stops publishing before the lease can pass to another instance.
 */
import { Redis, type RedisOptions } from 'ioredis'
import { pathHash } from '../detect/classify.ts'
import type { Aggregate } from '../detect/window.ts'
import { AGGREGATE_BUCKETS, type Keys, keysFor, SCHEMA_VERSION } from './keys.ts'
import { ACK, ACQUIRE, ANALYTICS_FLUSH, ENQUEUE, FLUSH, MARK, RELEASE, RENEW } from './scripts.ts'

export interface StoreConfig {
  /** `redis://host:port/db` (or `rediss://`); ignored when `sentinels` is set. */
  url: string
  /** Sentinel addresses (`host:port`) and the monitored master's name. */
  sentinels?: { hosts: string[]; name: string }
  namespace: string
  commandTimeoutMs: number
}

/** Raised when the namespace holds data of another, incompatible agent version. */
export class SchemaMismatchError extends Error {
  override readonly name = 'SchemaMismatchError'
}

/** Aggregates per flush call: bounds how long one script holds Redis (about a millisecond). */
const MAX_PER_CALL = 200

type Cmd = (...args: (string | number)[]) => Promise<unknown>
type Commands = Record<
  'wsFlush' | 'wsMark' | 'wsAnalytics' | 'wsAcquire' | 'wsRenew' | 'wsRelease' | 'wsEnqueue' | 'wsAck',
  Cmd
>

export interface WindowTotals {
  requests: number
  errors: number
  successes: number
  nonStatic: number
  suspicious: number
  /** -1 when the non-static count is below the point where distinct paths matter (not counted). */
  distinctPaths: number
  signalled: boolean
}

export class Store {
  readonly redis: Redis
  readonly keys: Keys
  readonly #c: Commands

  constructor(config: StoreConfig, extra: RedisOptions = {}) {
    const base: RedisOptions = {
      commandTimeout: config.commandTimeoutMs,
      connectTimeout: config.commandTimeoutMs * 2,
      maxRetriesPerRequest: 1,
      // A command that failed (timed out, or issued while disconnected) is retried by the
      // agent itself; ioredis must not also send it later, or counts would double.
      enableOfflineQueue: false,
      autoResendUnfulfilledCommands: false,
      // Commands issued in the same tick go out as one pipeline: a tick's flush is one round trip per batch, not per key.
      enableAutoPipelining: true,
      lazyConnect: true,
      retryStrategy: (n) => Math.min(100 * 2 ** n, 2000),
      ...extra,
    }
    if (config.sentinels) {
      this.redis = new Redis({
        ...base,
        sentinels: config.sentinels.hosts.map((h) => {
          const i = h.lastIndexOf(':')
          return { host: h.slice(0, i), port: Number(h.slice(i + 1)) }
        }),
        name: config.sentinels.name,
      })
    } else this.redis = new Redis(config.url, base)
    // Errors surface through the failed calls and readiness; without a listener ioredis logs them itself.
    this.redis.on('error', () => {})
    this.keys = keysFor(config.namespace)
    const define = (name: string, keys: number, lua: string) =>
      this.redis.defineCommand(name, { numberOfKeys: keys, lua })
    // The flush script's key count varies (one HyperLogLog per aggregate): passed per call.
    this.redis.defineCommand('wsFlush', { lua: FLUSH })
    define('wsMark', 1, MARK)
    define('wsAnalytics', 3, ANALYTICS_FLUSH)
    define('wsAcquire', 2, ACQUIRE)
    define('wsRenew', 1, RENEW)
    define('wsRelease', 1, RELEASE)
    define('wsEnqueue', 3, ENQUEUE)
    define('wsAck', 3, ACK)
    this.#c = this.redis as unknown as Commands
  }

  /** Connect and check (or set) the namespace's schema version (spec: versioning 3). */
  async open(): Promise<void> {
    await this.redis.connect()
    await this.checkSchema()
  }

  async checkSchema(): Promise<void> {
    await this.redis.set(this.keys.schema, SCHEMA_VERSION, 'NX')
    const found = await this.redis.get(this.keys.schema)
    if (found !== SCHEMA_VERSION) {
      throw new SchemaMismatchError(
        `store namespace holds schema version ${found}, this agent uses ${SCHEMA_VERSION}: run a compatible version or another namespace`,
      )
    }
  }

  async ping(): Promise<void> {
    await this.redis.ping()
  }

  /**
   * Fold a tick's aggregates into their windows; returns each one's window totals across all
   * instances, in input order. One script call per bucket (at most `MAX_PER_CALL` aggregates,
   * so one call never holds Redis for long); calls of a tick go out pipelined.
   */
  async flush(aggregates: Aggregate[], ttlMs: number, needPathsFrom = 0): Promise<Array<WindowTotals | Error>> {
    const groups = new Map<string, number[]>()
    aggregates.forEach((a, i) => {
      const key = `${a.host}\t${a.site}\t${a.windowStart}\t${pathHash(a.ip) % AGGREGATE_BUCKETS}`
      const g = groups.get(key)
      if (g) g.push(i)
      else groups.set(key, [i])
    })
    const calls: number[][] = []
    for (const g of groups.values())
      for (let i = 0; i < g.length; i += MAX_PER_CALL) calls.push(g.slice(i, i + MAX_PER_CALL))
    const out: Array<WindowTotals | Error> = new Array(aggregates.length)
    await Promise.all(
      calls.map(async (idx) => {
        const first = aggregates[idx[0]!]!
        const k = this.keys.bucket(first.host, first.site, first.windowStart, pathHash(first.ip) % AGGREGATE_BUCKETS)
        const keys = [k.counts]
        const argv: (string | number)[] = [ttlMs, needPathsFrom]
        for (const i of idx) {
          const a = aggregates[i]!
          keys.push(k.pathsPrefix + a.ip)
          argv.push(a.ip, a.requests, a.errors, a.successes, a.nonStatic, a.suspicious, a.paths.size)
          for (const h of a.paths) argv.push(h.toString(36))
        }
        try {
          const r = (await this.#c.wsFlush(keys.length, ...keys, ...argv)) as number[]
          idx.forEach((i, j) => {
            const o = j * 7
            out[i] = {
              requests: r[o]!,
              errors: r[o + 1]!,
              successes: r[o + 2]!,
              nonStatic: r[o + 3]!,
              suspicious: r[o + 4]!,
              distinctPaths: r[o + 5]!,
              signalled: r[o + 6] === 1,
            }
          })
        } catch (err) {
          for (const i of idx) out[i] = err as Error
        }
      }),
    )
    return out
  }

  async markSignalled(a: Aggregate): Promise<void> {
    const k = this.keys.bucket(a.host, a.site, a.windowStart, pathHash(a.ip) % AGGREGATE_BUCKETS)
    await this.#c.wsMark(k.counts, a.ip)
  }

  async acquire(owner: string, ttlMs: number): Promise<number> {
    return Number(await this.#c.wsAcquire(this.keys.lease, this.keys.epoch, owner, ttlMs))
  }

  async renew(owner: string, epoch: number, ttlMs: number): Promise<boolean> {
    return Number(await this.#c.wsRenew(this.keys.lease, owner, epoch, ttlMs)) === 1
  }

  async release(owner: string, epoch: number): Promise<boolean> {
    return Number(await this.#c.wsRelease(this.keys.lease, owner, epoch)) === 1
  }

  /** Current lease holder (for status and tests). */
  async leaseOwner(): Promise<{ owner: string; epoch: number } | undefined> {
    const h = await this.redis.hgetall(this.keys.lease)
    return h.owner ? { owner: h.owner, epoch: Number(h.epoch) } : undefined
  }

  outbox(kind: 'signals' | 'analytics'): Outbox {
    const k = this.keys
    return kind === 'signals'
      ? new Outbox(this, k.outbox, k.outboxData, k.sent)
      : new Outbox(this, k.analyticsOutbox, k.analyticsData, `${k.analyticsOutbox}:sent`)
  }

  async close(): Promise<void> {
    this.redis.disconnect()
  }

  /** @internal for Outbox */
  cmd(): Commands {
    return this.#c
  }
}

/** A store-backed, bounded outbox of JSON payloads keyed by a deterministic id (at-least-once). */
export class Outbox {
  readonly #store: Store
  readonly #zset: string
  readonly #data: string
  readonly #sent: string

  constructor(store: Store, zset: string, data: string, sent: string) {
    this.#store = store
    this.#zset = zset
    this.#data = data
    this.#sent = sent
  }

  /** Returns whether it was added and how many old entries the bound dropped. */
  async add(id: string, payload: unknown, max: number, nowMs: number): Promise<{ added: boolean; dropped: number }> {
    const r = (await this.#store
      .cmd()
      .wsEnqueue(this.#zset, this.#data, this.#sent, id, JSON.stringify(payload), max, nowMs)) as number[]
    return { added: r[0] === 1, dropped: r[1]! }
  }

  /** The oldest `limit` entries, in order. */
  async peek<T>(limit: number): Promise<Array<{ id: string; payload: T }>> {
    const ids = await this.#store.redis.zrange(this.#zset, 0, limit - 1)
    if (ids.length === 0) return []
    const values = await this.#store.redis.hmget(this.#data, ...ids)
    const out: Array<{ id: string; payload: T }> = []
    ids.forEach((id, i) => {
      const v = values[i]
      if (v != null) out.push({ id, payload: JSON.parse(v) as T })
    })
    return out
  }

  async ack(ids: string[], nowMs: number, rememberMs: number): Promise<void> {
    if (ids.length > 0) await this.#store.cmd().wsAck(this.#zset, this.#data, this.#sent, nowMs, rememberMs, ...ids)
  }

  async depth(): Promise<number> {
    return this.#store.redis.zcard(this.#zset)
  }
}
