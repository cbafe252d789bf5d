import type { Kysely, Transaction } from 'kysely'
import type { DB, NewUser, UserRow } from '../db/schema.ts'

type Db = Kysely<DB> | Transaction<DB>

export function findUserByName(db: Db, username: string): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('username', '=', username).executeTakeFirst()
}

export function findUserById(db: Db, id: string): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst()
}

export async function insertUser(db: Db, user: NewUser): Promise<void> {
  await db.insertInto('users').values(user).execute()
}

export function listUsers(db: Db): Promise<UserRow[]> {
  return db.selectFrom('users').selectAll().orderBy('username').execute()
}

export async function updateUser(db: Db, id: string, patch: Partial<Omit<UserRow, 'id'>>): Promise<void> {
  await db.updateTable('users').set(patch).where('id', '=', id).execute()
}

/**
 * Per user id, the credentials still in force: unexpired sessions (browsers and desktop apps)
 * and reader tokens. The user panel names these counts in its questions ("ends 3 sessions").
 */
export async function credentialCounts(
  db: Db,
  now = new Date(),
): Promise<Map<string, { sessions: number; tokens: number }>> {
  const at = now.toISOString()
  const [sessions, tokens] = await Promise.all([
    db
      .selectFrom('sessions')
      .select(['user_id', (eb) => eb.fn.countAll().as('c')])
      .where('expires_at', '>', at)
      .groupBy('user_id')
      .execute(),
    db
      .selectFrom('reader_tokens')
      .select(['user_id', (eb) => eb.fn.countAll().as('c')])
      .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', at)]))
      .groupBy('user_id')
      .execute(),
  ])
  const counts = new Map<string, { sessions: number; tokens: number }>()
  const entry = (id: string) => counts.get(id) ?? counts.set(id, { sessions: 0, tokens: 0 }).get(id)!
  for (const r of sessions) entry(r.user_id).sessions = Number(r.c)
  for (const r of tokens) entry(r.user_id).tokens = Number(r.c)
  return counts
}
