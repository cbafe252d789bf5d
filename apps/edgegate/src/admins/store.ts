/** SQL for administrators and their dashboard sessions. */
import type { Kysely, Transaction } from 'kysely'
import type { AdminRow, DB } from '../db/schema.ts'

type Db = Kysely<DB> | Transaction<DB>

export function findAdminByTokenHash(db: Db, hash: string): Promise<AdminRow | undefined> {
  return db.selectFrom('admins').selectAll().where('token_hash', '=', hash).executeTakeFirst()
}

export function listAdmins(db: Db): Promise<AdminRow[]> {
  return db.selectFrom('admins').selectAll().orderBy('name').execute()
}

export async function insertAdmin(db: Db, name: string, tokenHash: string, now: number): Promise<void> {
  await db.insertInto('admins').values({ name, token_hash: tokenHash, created_ms: now, last_used_ms: null }).execute()
}

export async function removeAdmin(db: Db, name: string): Promise<boolean> {
  await db.deleteFrom('sessions').where('admin_name', '=', name).execute()
  const r = await db.deleteFrom('admins').where('name', '=', name).executeTakeFirst()
  return Number(r.numDeletedRows) > 0
}

export async function insertSession(db: Db, idHash: string, admin: string, now: number, ttlMs: number) {
  await db
    .insertInto('sessions')
    .values({ id_hash: idHash, admin_name: admin, created_ms: now, expires_ms: now + ttlMs })
    .execute()
}

export function findSession(db: Db, idHash: string, now: number): Promise<{ admin_name: string } | undefined> {
  return db
    .selectFrom('sessions')
    .select('admin_name')
    .where('id_hash', '=', idHash)
    .where('expires_ms', '>', now)
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
