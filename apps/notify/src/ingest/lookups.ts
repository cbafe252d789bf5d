/**
 * The two reads of a delivery: its hook by token hash and, for a channel override, the
 * requested channel. Hooks are never cached: every delivery reads its hook from the
 * database, so a revoked hook stops at once for every process sharing it. (A hook cache
 * that stays correct must still read the database on every delivery, e.g. SQLite's
 * `PRAGMA data_version`, which costs about as much as the indexed read; measured in
 * docs/performance/notify.md.)
 *
 * SQLite: kit prepared queries, which run at once when the connection is free and wait for
 * a Kysely transaction holding it (whose uncommitted rows must not be seen) to end.
 *
 * PostgreSQL: the hook query also returns the channel generation (0004_channel_generation:
 * advanced in the same transaction as any change to channels), and channel lookups are
 * cached for that generation only. A channel created on any node is therefore seen by
 * the next delivery, and a delivery reads channels as of its token lookup or later; the
 * query per delivery for the channel is saved.
 */
import type { Database, PreparedQuery } from '@gatehouse/kit'
import { CompiledQuery, type Kysely } from 'kysely'
import { findChannel } from '../channels/store.ts'
import type { ChannelRow, DB, WebhookRow } from '../db/schema.ts'

/** PostgreSQL: the hook and the current channel generation, in one statement. */
const PG_HOOK = `select id, token_hash, channel, channel_locked, kind, created_at, revoked_at,
  (select generation from channel_generation where id = 1) as channel_generation
  from webhooks where token_hash = $1`

/** Channel names cached before the map is emptied (names come from senders: bounded memory). */
const CHANNEL_CACHE_LIMIT = 4096

export class DeliveryLookups {
  readonly #db: Kysely<DB>
  /** SQLite: the two reads as prepared queries (PostgreSQL reads the channel generation too). */
  readonly #hook: PreparedQuery<WebhookRow> | undefined
  readonly #channel: PreparedQuery<ChannelRow> | undefined
  /** PostgreSQL: the channel generation each looked-up hook was read with. */
  readonly #generations = new WeakMap<WebhookRow, number>()
  #cacheGeneration = -1
  readonly #channels = new Map<string, ChannelRow | undefined>()

  constructor(database: Database<DB>) {
    const db = database.db
    this.#db = db
    if (database.kind === 'sqlite') {
      this.#hook = database.prepare(
        db
          .selectFrom('webhooks')
          .select(['id', 'token_hash', 'channel', 'channel_locked', 'kind', 'created_at', 'revoked_at'])
          .where('token_hash', '=', ''),
      )
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
    return this.#hook ? this.#hook.first(tokenHash) : this.#hookWithGeneration(tokenHash)
  }

  async #hookWithGeneration(tokenHash: string): Promise<WebhookRow | undefined> {
    const result = await this.#db.executeQuery<WebhookRow & { channel_generation: number | null }>(
      CompiledQuery.raw(PG_HOOK, [tokenHash]),
    )
    const row = result.rows[0]
    if (!row) return undefined
    const { channel_generation, ...hook } = row
    if (channel_generation !== null) this.#generations.set(hook, Number(channel_generation))
    return hook
  }

  /** The channel with this name, if any, for a delivery by `hook`. */
  channel(name: string, hook: WebhookRow): Promise<ChannelRow | undefined> | ChannelRow | undefined {
    if (this.#channel) return this.#channel.first(name)
    const generation = this.#generations.get(hook)
    if (generation === undefined) return findChannel(this.#db, name)
    if (generation > this.#cacheGeneration) {
      this.#channels.clear()
      this.#cacheGeneration = generation
    }
    if (generation === this.#cacheGeneration && this.#channels.has(name)) return this.#channels.get(name)
    return this.#readChannel(name, generation)
  }

  async #readChannel(name: string, generation: number): Promise<ChannelRow | undefined> {
    const row = await findChannel(this.#db, name)
    // Cached only if no newer generation was seen meanwhile.
    if (generation === this.#cacheGeneration) {
      if (this.#channels.size >= CHANNEL_CACHE_LIMIT) this.#channels.clear()
      this.#channels.set(name, row)
    }
    return row
  }
}
