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
