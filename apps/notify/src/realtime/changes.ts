/**
 * Writing to the realtime stream's change log. Call `appendChange` inside the transaction
 * that makes the change, so the stream carries exactly the committed changes.
 *
 * Resume without loss needs ids that become visible in id order: a reader that saw change
 * 12 must never later find a committed change 11. SQLite has one writer, so that holds. On
 * PostgreSQL two transactions can take ids 11 and 12 and commit 12 first; a transaction-scoped
 * advisory lock taken just before the insert and held until commit orders them. The same
 * statement queues a NOTIFY, which PostgreSQL delivers to every listening process at commit.
 * New notifications get the same treatment in ingest/write-queue.ts (STREAM_LOCK_NOTIFICATIONS).
 */
import { sql } from '@gatehouse/kit/db/database.ts'
import type { Kysely, Transaction } from 'kysely'
import type { DB, StreamChangeTable } from '../db/schema.ts'

type Db = Kysely<DB> | Transaction<DB>

/** The NOTIFY channel every notify process LISTENs on; the payload is empty (a wake-up). */
export const STREAM_PG_CHANNEL = 'notify_stream'
/** Advisory lock keys serialising id assignment to commit order (arbitrary, app-unique). */
export const STREAM_LOCK_CHANGES = 0x6e6f7401
export const STREAM_LOCK_NOTIFICATIONS = 0x6e6f7402

export interface Change {
  kind: StreamChangeTable['kind']
  channel?: string
  /** Only this reader's streams carry the change. */
  userId?: string
  data: Record<string, unknown>
}

/**
 * A membership change's `change` when the reader's sessions were ended (revoked, password
 * reset): the hub closes that reader's open streams, which outlive the request that opened them.
 */
export const SESSIONS_ENDED = 'sessions_ended'

/** Record a change for the stream, in the caller's transaction (PostgreSQL: `db` must be one). */
export async function appendChange(db: Db, kind: 'sqlite' | 'postgres', change: Change): Promise<void> {
  if (kind === 'postgres')
    await sql`select pg_advisory_xact_lock(${STREAM_LOCK_CHANGES}), pg_notify(${STREAM_PG_CHANNEL}, '')`.execute(db)
  await db
    .insertInto('stream_changes')
    .values({
      kind: change.kind,
      channel: change.channel ?? null,
      user_id: change.userId ?? null,
      data: JSON.stringify(change.data),
      created_at: new Date().toISOString(),
    })
    .execute()
}
