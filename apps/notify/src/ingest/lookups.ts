/**
 * The two reads of a delivery: its hook by token hash and, for a channel override, the
 * requested channel. Not cached: every delivery reads the database, so a revoked hook
 * stops at once for every process sharing it. (A cache that stays correct must still read
 * the database on every delivery, `PRAGMA data_version` on SQLite, which costs about as
 * much as these indexed reads; measured in docs/performance/notify.md.)
 *
 * SQLite: prepared statements on the connection under Kysely, run synchronously; while a
 * Kysely transaction is open on that connection (it spans awaits, and its uncommitted
 * rows must not be seen), the Kysely queries are used, which wait for it to end.
 */
import type { DatabaseSync, StatementSync } from 'node:sqlite'
import type { Kysely } from 'kysely'
import { findChannel } from '../channels/store.ts'
import type { ChannelRow, DB, WebhookRow } from '../db/schema.ts'
import { findWebhookByTokenHash } from '../webhooks/store.ts'

export class DeliveryLookups {
  readonly #db: Kysely<DB>
  readonly #sqlite: DatabaseSync | undefined
  readonly #hook: StatementSync | undefined
  readonly #channel: StatementSync | undefined

  /** `sqlite`: the connection under `db`, for the prepared-statement path. */
  constructor(db: Kysely<DB>, sqlite?: DatabaseSync) {
    this.#db = db
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
    return findWebhookByTokenHash(this.#db, tokenHash)
  }

  /** The channel with this name, if any. */
  channel(name: string): Promise<ChannelRow | undefined> | ChannelRow | undefined {
    if (this.#raw) return this.#channel!.get(name) as ChannelRow | undefined
    return findChannel(this.#db, name)
  }
}
