/** SQL for administrators and their dashboard sessions. */
import { type Kysely, sql, type Transaction } from 'kysely'
import type { AdminRow, DB } from '../db/schema.ts'

type Db = Kysely<DB> | Transaction<DB>

export function findAdminByTokenHash(db: Db, hash: string): Promise<AdminRow | undefined> {
  return db.selectFrom('admins').selectAll().where('token_hash', '=', hash).executeTakeFirst()
}

export function listAdmins(db: Db): Promise<AdminRow[]> {
  return db.selectFrom('admins').selectAll().orderBy('name').execute()
}

/** `expiresMs`: when the token stops working (null: never). */
export async function insertAdmin(
  db: Db,
  name: string,
  tokenHash: string,
  now: number,
  expiresMs: number | null,
): Promise<void> {
  await db
    .insertInto('admins')
    .values({ name, token_hash: tokenHash, created_ms: now, last_used_ms: null, expires_ms: expiresMs })
    .execute()
}

/** A busy script would otherwise write on every call: last use is recorded at most once a minute. */
export const LAST_USED_GRANULARITY_MS = 60_000

/** Record that `name`'s token was presented (an API call or a dashboard sign-in). */
export async function recordAdminUse(db: Db, name: string, now: number): Promise<void> {
  await db
    .updateTable('admins')
    .set({ last_used_ms: now })
    .where('name', '=', name)
    .where((eb) => eb.or([eb('last_used_ms', 'is', null), eb('last_used_ms', '<', now - LAST_USED_GRANULARITY_MS)]))
    .execute()
}

/**
 * Give `name` a new token hash, expiring at `expiresMs` (null: never), and end its sessions;
 * false when there is no such administrator.
 */
export async function replaceAdminToken(
  db: Db,
  name: string,
  tokenHash: string,
  expiresMs: number | null,
): Promise<boolean> {
  const r = await db
    .updateTable('admins')
    .set({ token_hash: tokenHash, expires_ms: expiresMs })
    .where('name', '=', name)
    .executeTakeFirst()
  if (Number(r.numUpdatedRows) === 0) return false
  await db.deleteFrom('sessions').where('admin_name', '=', name).execute()
  await forgetTokenAlerts(db, name)
  return true
}

/** The key of an administrator's token in `node_alerts` (nodes/health.ts announces its expiry). */
export const adminAlertKey = (name: string) => `admin:${name}`

/** A new token, or none, owes no announcement of the old one's expiry, nor suppresses its own. */
async function forgetTokenAlerts(db: Db, name: string): Promise<void> {
  await db.deleteFrom('node_alerts').where('instance_id', '=', adminAlertKey(name)).execute()
}

export async function removeAdmin(db: Db, name: string): Promise<boolean> {
  await db.deleteFrom('sessions').where('admin_name', '=', name).execute()
  await forgetTokenAlerts(db, name)
  const r = await db.deleteFrom('admins').where('name', '=', name).executeTakeFirst()
  return Number(r.numDeletedRows) > 0
}

export async function insertSession(db: Db, idHash: string, admin: string, now: number, ttlMs: number) {
  await db
    .insertInto('sessions')
    .values({ id_hash: idHash, admin_name: admin, created_ms: now, expires_ms: now + ttlMs })
    .execute()
}

/** A live session, with when its administrator's token expires (null: never). */
export function findSession(
  db: Db,
  idHash: string,
  now: number,
): Promise<{ admin_name: string; token_expires_ms: number | string | null } | undefined> {
  return db
    .selectFrom('sessions')
    .innerJoin('admins', 'admins.name', 'sessions.admin_name')
    .select(['sessions.admin_name', 'admins.expires_ms as token_expires_ms'])
    .where('sessions.id_hash', '=', idHash)
    .where('sessions.expires_ms', '>', now)
    .executeTakeFirst()
}

export async function deleteSession(db: Db, idHash: string): Promise<void> {
  await db.deleteFrom('sessions').where('id_hash', '=', idHash).execute()
}

export async function deleteExpiredSessions(db: Db, now: number): Promise<void> {
  await db.deleteFrom('sessions').where('expires_ms', '<=', now).execute()
}

export async function audit(db: Db, actor: string, action: string, target: string, now = Date.now()) {
  await db.insertInto('audit_log').values({ at_ms: now, actor, action, target }).execute()
}

export interface AuditFilter {
  /** Only entries at or after this time (ms). */
  sinceMs?: number
  actor?: string
  /** An action (`decision.blocked`) or its family (`decision`, `node`, `web_enforcement`). */
  action?: string
  /** The target, e.g. `edge-1/<fingerprint>` or a node id. */
  target?: string
  limit: number
}

/** Audit entries, newest first. */
export function listAudit(db: Db, f: AuditFilter) {
  let q = db.selectFrom('audit_log').selectAll()
  if (f.sinceMs !== undefined) q = q.where('at_ms', '>=', f.sinceMs)
  if (f.actor !== undefined) q = q.where('actor', '=', f.actor)
  if (f.action !== undefined) {
    const family = `${f.action}.`
    // A prefix compare, not LIKE: action names hold "_", a LIKE wildcard.
    q = q.where((eb) =>
      eb.or([eb('action', '=', f.action!), eb(sql`substr(action, 1, ${family.length})`, '=', family)]),
    )
  }
  if (f.target !== undefined) q = q.where('target', '=', f.target)
  return q.orderBy('at_ms', 'desc').limit(f.limit).execute()
}
