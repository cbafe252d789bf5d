/**
 * The append-only audit log of zone changes; events older than `--audit-retention` are
 * removed by an hourly job (`removeAuditBefore`).
 */
import { deleteBefore, firstIdFrom } from '@gatehouse/kit/db/batched-delete.ts'
import type { Kysely, Transaction } from 'kysely'
import type { AuditEventRow, DB, NewAuditEvent } from '../db/schema.ts'

type Db = Kysely<DB> | Transaction<DB>

export async function appendAudit(db: Db, event: NewAuditEvent): Promise<void> {
  await db.insertInto('audit_events').values(event).execute()
}

export async function hasAuditFor(db: Db, requestId: string, zone: string): Promise<boolean> {
  const row = await db
    .selectFrom('audit_events')
    .select('id')
    .where('request_id', '=', requestId)
    .where('zone', '=', zone)
    .executeTakeFirst()
  return row !== undefined
}

/** Newest first; `before` (an id) continues a listing where the previous page ended. */
export function listAudit(
  db: Db,
  zone: string,
  page: { limit: number; before?: number | undefined },
): Promise<AuditEventRow[]> {
  let q = db.selectFrom('audit_events').selectAll().where('zone', '=', zone)
  if (page.before !== undefined) q = q.where('id', '<', page.before)
  return q.orderBy('id', 'desc').limit(page.limit).execute()
}

/**
 * Remove the events recorded before `beforeMs`, except the newest committed publication (the
 * HA status reports its time); returns how many. Ids grow with time, so the first recent event
 * ends the range, found walking from the oldest: the walk passes only the events about to go.
 */
export async function removeAuditBefore(db: Kysely<DB>, beforeMs: number): Promise<number> {
  const firstRecent = await firstIdFrom(db, 'audit_events', 'at', new Date(beforeMs).toISOString())
  const publication = await newestPublication(db)
  // Nothing recent and no publication: every event goes (deleteBefore reads first, so an empty
  // log costs no write, which a failing disk would refuse).
  const keepFrom = Math.min(firstRecent ?? Number.MAX_SAFE_INTEGER, publication?.id ?? Number.MAX_SAFE_INTEGER)
  return deleteBefore(db, 'audit_events', 'id', keepFrom)
}

/**
 * The newest committed zone publication. Events are appended in time order, so it is found
 * walking back from the end (`max(at)` read every event: 91-98 ms of SQLite's server at a
 * million, which the HA status paid on each check).
 */
export async function newestPublication(db: Db): Promise<{ id: number; at: string } | undefined> {
  const row = await db
    .selectFrom('audit_events')
    .select(['id', 'at'])
    .where('outcome', '=', 'committed')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst()
  return row && { id: Number(row.id), at: row.at }
}
