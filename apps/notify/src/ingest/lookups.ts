/**
 * The two reads of a delivery: its hook by token hash and, for a channel override, the
 * requested channel. Hooks are never cached: every delivery reads its hook from the
 * database, so a revoked hook stops at once for every process sharing it. (A hook cache
 * that stays correct must still read the database on every delivery, e.g. SQLite's
 * `PRAGMA data_version`, which costs about as much as the indexed read; measured in
 * docs/performance/notify.md.)
 *
 * Channels are cached per channel generation, on both databases: the hook query also
 * returns the generation (migrations 0004 and 0010: advanced in the same transaction as any
 * change to channels), and channel lookups are cached for that generation only. A channel
 * created on any node is therefore seen by the next delivery, and a delivery reads channels
 * as of its token lookup or later; the read per delivery for the channel is saved (on
 * SQLite it was a read transaction of its own, as costly as the hook lookup).
 *
 * Hook lookups are grouped, on both databases: those waiting when a query can start (the
 * turn's check phase) go in one statement, at most HOOKS_IN_FLIGHT at once. On PostgreSQL
 * (`token_hash = any($1)`) one round trip serves every delivery that arrived during the
 * previous one; on SQLite (`in (select value from json_each(?))`, a kit prepared query) one
 * read transaction serves the turn's deliveries, where each autocommitted read paid WAL
 * read-lock work of its own (8.6 µs CPU alone against 2.0 µs each in groups of 8). Each query still
 * starts after its deliveries arrived: a revocation committed before a delivery is always
 * seen. SQLite's prepared queries run at once when the connection is free and wait for a
 * Kysely transaction holding it (whose uncommitted rows must not be seen) to end.
 */
import type { Database, PreparedQuery } from '@gatehouse/kit'
import { CompiledQuery, type Kysely } from 'kysely'
import { findChannel } from '../channels/store.ts'
import type { ChannelRow, DB, WebhookRow } from '../db/schema.ts'

/** PostgreSQL: the hooks and the current channel generation, in one statement. */
const PG_HOOKS = `select id, token_hash, channel, channel_locked, kind, created_at, revoked_at,
  (select generation from channel_generation where id = 1) as channel_generation
  from webhooks where token_hash = any($1::text[])`
/** SQLite: the same, the token hashes as a JSON array (one statement: one read transaction). */
const SQLITE_HOOKS = `select id, token_hash, channel, channel_locked, kind, created_at, revoked_at,
  (select generation from channel_generation where id = 1) as channel_generation
  from webhooks where token_hash in (select value from json_each(?))`

type HookWithGeneration = WebhookRow & { channel_generation: number | string | null }
/** Grouped hook queries running at once (PostgreSQL: on the wire; SQLite: waiting for a transaction to end). */
const HOOKS_IN_FLIGHT = 2

/** Channel names cached before the map is emptied (names come from senders: bounded memory). */
const CHANNEL_CACHE_LIMIT = 4096

export class DeliveryLookups {
  readonly #db: Kysely<DB>
  /** SQLite: the two reads as prepared queries. */
  readonly #hooks: PreparedQuery<HookWithGeneration> | undefined
  readonly #channel: PreparedQuery<ChannelRow> | undefined
  /** The channel generation each looked-up hook was read with. */
  readonly #generations = new WeakMap<WebhookRow, number>()
  #cacheGeneration = -1
  readonly #channels = new Map<string, ChannelRow | undefined>()
  /** Hook lookups waiting for the next grouped query, by token hash. */
  #waiting = new Map<string, Array<{ resolve(row: WebhookRow | undefined): void; reject(err: unknown): void }>>()
  #scheduled = false
  #inFlight = 0

  constructor(database: Database<DB>) {
    const db = database.db
    this.#db = db
    if (database.kind === 'sqlite') {
      this.#hooks = database.prepare({
        compile: () => CompiledQuery.raw(SQLITE_HOOKS, ['']) as CompiledQuery<HookWithGeneration>,
      })
      this.#channel = database.prepare(
        db
          .selectFrom('channels')
          .select(['name', 'display_name', 'description', 'accent_color', 'visibility', 'created_at'])
          .where('name', '=', ''),
      )
    }
  }

  /** The hook with this token hash (active or revoked), if any. */
  hook(tokenHash: string): Promise<WebhookRow | undefined> {
    return new Promise((resolve, reject) => {
      const list = this.#waiting.get(tokenHash)
      if (list) list.push({ resolve, reject })
      else this.#waiting.set(tokenHash, [{ resolve, reject }])
      this.#schedule()
    })
  }

  #schedule(): void {
    if (this.#scheduled || this.#waiting.size === 0 || this.#inFlight >= HOOKS_IN_FLIGHT) return
    this.#scheduled = true
    setImmediate(() => void this.#queryHooks())
  }

  async #queryHooks(): Promise<void> {
    this.#scheduled = false
    const waiting = this.#waiting
    this.#waiting = new Map()
    this.#inFlight++
    try {
      const rows = this.#hooks
        ? await this.#hooks.all(JSON.stringify([...waiting.keys()]))
        : (await this.#db.executeQuery<HookWithGeneration>(CompiledQuery.raw(PG_HOOKS, [[...waiting.keys()]]))).rows
      const found = new Map<string, { hook: WebhookRow; generation: number | null }>()
      for (const { channel_generation, ...hook } of rows)
        found.set(hook.token_hash, {
          hook,
          generation: channel_generation === null ? null : Number(channel_generation),
        })
      // Each waiter gets its own copy: a caller may keep or change its row.
      for (const [hash, list] of waiting) {
        const entry = found.get(hash)
        for (const w of list) {
          if (!entry) {
            w.resolve(undefined)
            continue
          }
          const copy = { ...entry.hook }
          if (entry.generation !== null) this.#generations.set(copy, entry.generation)
          w.resolve(copy)
        }
      }
    } catch (err) {
      for (const list of waiting.values()) for (const w of list) w.reject(err)
    } finally {
      this.#inFlight--
      this.#schedule()
    }
  }

  /** The channel with this name, if any, for a delivery by `hook`. */
  channel(name: string, hook: WebhookRow): Promise<ChannelRow | undefined> | ChannelRow | undefined {
    const generation = this.#generations.get(hook)
    if (generation === undefined) return this.#findChannel(name)
    if (generation > this.#cacheGeneration) {
      this.#channels.clear()
      this.#cacheGeneration = generation
    }
    if (generation === this.#cacheGeneration && this.#channels.has(name)) return this.#channels.get(name)
    return this.#readChannel(name, generation)
  }

  #findChannel(name: string): Promise<ChannelRow | undefined> {
    return this.#channel ? this.#channel.first(name) : findChannel(this.#db, name)
  }

  async #readChannel(name: string, generation: number): Promise<ChannelRow | undefined> {
    const row = await this.#findChannel(name)
    // Cached only if no newer generation was seen meanwhile.
    if (generation === this.#cacheGeneration) {
      if (this.#channels.size >= CHANNEL_CACHE_LIMIT) this.#channels.clear()
      this.#channels.set(name, row)
    }
    return row
  }
}
