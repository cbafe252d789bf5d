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

/** Newest first. */
export function listAudit(db: Db, zone?: string, limit = 100): Promise<AuditEventRow[]> {
  let q = db.selectFrom('audit_events').selectAll()
  if (zone !== undefined) q = q.where('zone', '=', zone)
  return q.orderBy('id', 'desc').limit(limit).execute()
}
