/** Browser sessions: a random secret in an HttpOnly Secure cookie, stored as its SHA-256. */
import { generateToken, hashToken } from '@gatehouse/kit'
import type { Kysely } from 'kysely'
import type { DB, UserRow } from '../db/schema.ts'

export const SESSION_COOKIE = 'artsvc_session'

export async function createSession(
  db: Kysely<DB>,
  userId: string,
  groups: string[],
  now: number,
  ttlMs: number,
): Promise<string> {
  const token = generateToken()
  await db
    .insertInto('sessions')
    .values({
      token_hash: hashToken(token),
      user_id: userId,
      groups: JSON.stringify(groups),
      created_at: now,
      expires_at: now + ttlMs,
    })
    .execute()
  return token
}

export async function findSession(
  db: Kysely<DB>,
  token: string,
  now: number,
): Promise<{ user: UserRow; groups: string[] } | undefined> {
  if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return undefined
  const row = await db
    .selectFrom('sessions')
    .innerJoin('users', 'users.id', 'sessions.user_id')
    .selectAll('users')
    .select(['sessions.groups', 'sessions.expires_at'])
    .where('sessions.token_hash', '=', hashToken(token))
    .executeTakeFirst()
  if (!row || Number(row.expires_at) <= now) return undefined
  const { groups, expires_at: _e, ...user } = row
  return { user, groups: JSON.parse(groups) as string[] }
}

export async function deleteSession(db: Kysely<DB>, token: string): Promise<void> {
  await db.deleteFrom('sessions').where('token_hash', '=', hashToken(token)).execute()
}
