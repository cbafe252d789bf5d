/**
 * The administrative audit log (spec Part B, Authentication 6): one immutable row per
 * privileged change (users, channel roles, action targets, imports, reader API tokens issued
 * or revoked), written in the same transaction as the change where there is one. Details never
 * hold a secret.
 */
import type { Kysely, Transaction } from 'kysely'
import type { Reader } from '../auth/guard.ts'
import type { DB } from '../db/schema.ts'

type Db = Kysely<DB> | Transaction<DB>

export interface AuditEntry {
  id: number
  actor: string
  action: string
  target: string
  details: Record<string, unknown>
  created_at: string
}

export async function recordAudit(
  db: Db,
  actor: Pick<Reader, 'id' | 'username'>,
  action: string,
  target: string,
  details: Record<string, unknown> = {},
): Promise<void> {
  await db
    .insertInto('admin_audit')
    .values({
      actor_id: actor.id,
      actor: actor.username,
      action,
      target,
      details: JSON.stringify(details),
      created_at: new Date().toISOString(),
    })
    .execute()
}

/** Newest first, `limit` entries older than id `before`. */
export async function listAudit(db: Db, limit: number, before?: number): Promise<AuditEntry[]> {
  let q = db.selectFrom('admin_audit').selectAll().orderBy('id', 'desc').limit(limit)
  if (before !== undefined) q = q.where('id', '<', before)
  const rows = await q.execute()
  return rows.map((r) => ({
    id: Number(r.id),
    actor: r.actor,
    action: r.action,
    target: r.target,
    details: JSON.parse(r.details) as Record<string, unknown>,
    created_at: r.created_at,
  }))
}
