/**
 * The two reads of a delivery: its hook by token hash and, for a channel override, the
 * requested channel. Hooks are never cached: every delivery reads its hook from the
 * database, so a revoked hook stops at once for every process sharing it. (A hook cache
 * that stays correct must still read the database on every delivery, e.g. SQLite's
 * `PRAGMA data_version`, which costs about as much as the indexed read; measured in
 * docs/performance/notify.md.)
 *
 * SQLite: prepared statements on the connection under Kysely, run synchronously; while a
 * Kysely transaction is open on that connection (it spans awaits, and its uncommitted
 * rows must not be seen), the Kysely queries are used, which wait for it to end.
 *
 * PostgreSQL: the hook query also returns the channel generation (0004_channel_generation:
 * advanced in the same transaction as any change to channels), and channel lookups are
 * cached for that generation only. A channel created on any node is therefore seen by
 * the next delivery, and a delivery reads channels as of its token lookup or later; the
 * query per delivery for the channel is saved.
 */
import type { DatabaseSync, StatementSync } from 'node:sqlite'
import type { DatabaseKind } from '@gatehouse/kit'
import { CompiledQuery, type Kysely } from 'kysely'
import { findChannel } from '../channels/store.ts'
import type { ChannelRow, DB, WebhookRow } from '../db/schema.ts'
import { findWebhookByTokenHash } from '../webhooks/store.ts'

/** PostgreSQL: the hook and the current channel generation, in one statement. */
const PG_HOOK = `select id, token_hash, channel, channel_locked, kind, created_at, revoked_at,
  (select generation from channel_generation where id = 1) as channel_generation
  from webhooks where token_hash = $1`

/** Channel names cached before the map is emptied (names come from senders: bounded memory). */
const CHANNEL_CACHE_LIMIT = 4096

export class DeliveryLookups {
  readonly #db: Kysely<DB>
  readonly #kind: DatabaseKind
  readonly #sqlite: DatabaseSync | undefined
  readonly #hook: StatementSync | undefined
  readonly #channel: StatementSync | undefined
  /** PostgreSQL: the channel generation each looked-up hook was read with. */
  readonly #generations = new WeakMap<WebhookRow, number>()
  #cacheGeneration = -1
  readonly #channels = new Map<string, ChannelRow | undefined>()

  /** `sqlite`: the connection under `db`, for the prepared-statement path. */
  constructor(db: Kysely<DB>, kind: DatabaseKind, sqlite?: DatabaseSync) {
    this.#db = db
    this.#kind = kind
    this.#sqlite = sqlite
    this.#hook = sqlite?.prepare(
      'select id, token_hash, channel, channel_locked, kind, created_at, revoked_at from webhooks where token_hash = ?',
    )
    this.#channel = sqlite?.prepare(
      'select name, display_name, description, accent_color, visibility, created_at from channels where name = ?',
    )
  }

  /** Whether the prepared statements may run now (no Kysely transaction open). */
  get #raw(): boolean {
    const s = this.#sqlite
    if (!s?.isOpen) return false
    return !s.isTransaction
  }

  /** The hook with this token hash (active or revoked), if any. */
  hook(tokenHash: string): Promise<WebhookRow | undefined> | WebhookRow | undefined {
    if (this.#raw) return this.#hook!.get(tokenHash) as WebhookRow | undefined
    if (this.#kind === 'postgres') return this.#hookWithGeneration(tokenHash)
    return findWebhookByTokenHash(this.#db, tokenHash)
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
    if (this.#raw) return this.#channel!.get(name) as ChannelRow | undefined
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
