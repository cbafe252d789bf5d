/** Audit records of privileged mutations (retained ARTSVC_AUDIT_RETENTION, pruned by maintenance). */
import type { Kysely, Transaction } from 'kysely'
import type { Principal } from '../auth/principal.ts'
import type { AuditRow, DB } from '../db/schema.ts'
import { iso, newId } from '../ids.ts'

type Db = Kysely<DB> | Transaction<DB>

export interface AuditEntry {
  action: string
  targetType: 'artifact' | 'share' | 'upload' | 'grant' | 'session' | 'theme'
  targetId: string
  details?: Record<string, unknown>
}

export async function recordAudit(db: Db, actor: Principal | undefined, entry: AuditEntry, now: number): Promise<void> {
  await db
    .insertInto('audit_events')
    .values({
      id: newId(),
      at: now,
      actor_id: actor?.user.id ?? null,
      actor_subject: actor?.user.oidc_subject ?? null,
      action: entry.action,
      target_type: entry.targetType,
      target_id: entry.targetId,
      // A delegated call names both: the user as actor, the gateway in the details.
      details: JSON.stringify(
        actor?.gateway ? { ...entry.details, gateway: actor.gateway.oidc_subject } : (entry.details ?? {}),
      ),
    })
    .execute()
}

export async function listAudit(db: Db, limit: number, before?: number) {
  let q = db.selectFrom('audit_events').selectAll().orderBy('at', 'desc').orderBy('id').limit(limit)
  if (before !== undefined) q = q.where('at', '<', before)
  return (await q.execute()).map(auditJson)
}

export function auditJson(row: AuditRow) {
  return {
    id: row.id,
    at: iso(Number(row.at)),
    actor: row.actor_subject,
    action: row.action,
    target_type: row.target_type,
    target_id: row.target_id,
    details: JSON.parse(row.details) as Record<string, unknown>,
  }
}
