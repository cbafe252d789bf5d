/**
 * The shared store (Redis through ioredis; Sentinel via the `sentinels` option). Short
 * command timeouts: a stalled store fails calls fast, so a publisher whose lease cannot be
 * renewed stops publishing before the lease can pass to another instance.
 */
import { Redis, type RedisOptions } from 'ioredis'
import { pathHash } from '../detect/classify.ts'
import type { Thresholds } from '../detect/detect.ts'
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

/** Raised when the store cannot be used as configured: the namespace holds data of another, incompatible agent version, or the database does not exist. */
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
}

/** A tick's flush: the aggregates whose call failed (to retry), and those that cross a threshold now. */
export interface FlushResult {
  failed: Aggregate[]
  /** Failed script calls (each covers up to `MAX_PER_CALL` aggregates of one bucket). */
  failedCalls: number
  /** The first call's failure, when any failed (a READONLY replica, OOM, a closed connection). */
  error?: unknown
  candidates: Array<{ aggregate: Aggregate; totals: WindowTotals }>
}

/** `ip,r,e,s,n,x,pathhash,...`: the FLUSH script's packed argument. */
function pack(a: Aggregate): string {
  let s = `${a.ip},${a.requests},${a.errors},${a.successes},${a.nonStatic},${a.suspicious}`
  for (const h of a.paths) s += `,${h.toString(36)}`
  return s
}

export class Store {
  readonly redis: Redis
  readonly keys: Keys
  /** The connection's last error (`connect ECONNREFUSED 127.0.0.1:6379`), for startup messages. */
  lastError: Error | undefined
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
    // Errors surface through the failed calls and readiness; without a listener ioredis logs them
    // itself. The last one is kept: a refused connect says only "Connection is closed."
    this.redis.on('error', (err: Error) => {
      this.lastError = err
    })
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

  /** Connect, check the database exists, and check (or set) the namespace's schema version (spec: versioning 3). */
  async open(): Promise<void> {
    await this.redis.connect()
    // ioredis sends SELECT on connect but goes on in database 0 when it is refused.
    const db = this.redis.options.db ?? 0
    if (db !== 0) {
      try {
        await this.redis.select(db)
      } catch (err) {
        throw new SchemaMismatchError(
          `store database ${db} cannot be selected (${(err as Error).message}): the server has fewer databases (its "databases" setting), or the URL names the wrong one`,
        )
      }
    }
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
   * Fold a tick's aggregates into their windows. One script call per bucket (at most
   * `MAX_PER_CALL` aggregates, so one call never holds Redis for long); the calls of a tick
   * go out pipelined. The store evaluates the thresholds and returns the window totals of
   * the aggregates that cross one and were not signalled yet.
   */
  async flush(aggregates: Aggregate[], ttlMs: number, th: Thresholds): Promise<FlushResult> {
    // Group by bucket without a key string per aggregate: the aggregator hands them out
    // grouped by (host, site, window), so the scope's bucket table is looked up once per run.
    const calls: Aggregate[][] = []
    const scopes = new Map<string, Array<Aggregate[] | undefined>>()
    let scope: Aggregate | undefined
    let buckets: Array<Aggregate[] | undefined> = []
    for (const a of aggregates) {
      if (
        scope === undefined ||
        a.windowStart !== scope.windowStart ||
        a.host !== scope.host ||
        a.site !== scope.site
      ) {
        const key = `${a.host}\t${a.site}\t${a.windowStart}`
        buckets = scopes.get(key) ?? []
        scopes.set(key, buckets)
        scope = a
      }
      const b = pathHash(a.ip) % AGGREGATE_BUCKETS
      let call = buckets[b]
      if (call === undefined || call.length >= MAX_PER_CALL) {
        call = []
        buckets[b] = call
        calls.push(call)
      }
      call.push(a)
    }
    const result: FlushResult = { failed: [], failedCalls: 0, candidates: [] }
    const thresholds = [th.minRequests, th.minSuspiciousHits, th.minDistinctPaths, th.minErrorRatio]
    await Promise.all(
      calls.map(async (call) => {
        const first = call[0]!
        const k = this.keys.bucket(first.host, first.site, first.windowStart, pathHash(first.ip) % AGGREGATE_BUCKETS)
        const keys = [k.counts]
        const argv: (string | number)[] = [ttlMs, ...thresholds]
        for (const a of call) {
          keys.push(k.pathsPrefix + a.ip)
          argv.push(pack(a))
        }
        let r: number[]
        try {
          r = (await this.#c.wsFlush(keys.length, ...keys, ...argv)) as number[]
        } catch (err) {
          result.failedCalls++
          result.error ??= err
          for (const a of call) result.failed.push(a)
          return
        }
        for (let o = 0; o < r.length; o += 7) {
          result.candidates.push({
            aggregate: call[r[o]! - 1]!,
            totals: {
              requests: r[o + 1]!,
              errors: r[o + 2]!,
              successes: r[o + 3]!,
              nonStatic: r[o + 4]!,
              suspicious: r[o + 5]!,
              distinctPaths: r[o + 6]!,
            },
          })
        }
      }),
    )
    return result
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
