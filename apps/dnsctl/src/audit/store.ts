/** The append-only audit log of zone changes. */
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
