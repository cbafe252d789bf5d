/**
 * Reader sessions: a random 256-bit secret in an HttpOnly, SameSite=Strict cookie; only
 * its SHA-256 hash is stored.
 */
import { generateToken, hashToken } from '@gatehouse/kit'
import type { Kysely } from 'kysely'
import type { DB, UserRow } from '../db/schema.ts'

export const SESSION_COOKIE = 'notify_session'

export async function createSession(db: Kysely<DB>, userId: string, ttlMs: number): Promise<string> {
  const token = generateToken()
  const now = new Date()
  await db
    .insertInto('sessions')
    .values({
      token_hash: hashToken(token),
      user_id: userId,
      created_at: now.toISOString(),
      expires_at: new Date(now.getTime() + ttlMs).toISOString(),
    })
    .execute()
  await db.updateTable('users').set({ last_sign_in_at: now.toISOString() }).where('id', '=', userId).execute()
  // Expired sessions of this user are dropped on each sign-in, so the table stays small.
  await db.deleteFrom('sessions').where('user_id', '=', userId).where('expires_at', '<=', now.toISOString()).execute()
  return token
}

/** The enabled user an unexpired session belongs to, with the session's expiry. */
export async function userForSession(
  db: Kysely<DB>,
  token: string,
): Promise<(UserRow & { credential_expires_at: string }) | undefined> {
  return db
    .selectFrom('sessions')
    .innerJoin('users', 'users.id', 'sessions.user_id')
    .selectAll('users')
    .select('sessions.expires_at as credential_expires_at')
    .where('sessions.token_hash', '=', hashToken(token))
    .where('sessions.expires_at', '>', new Date().toISOString())
    .where('users.enabled', '=', 1)
    .executeTakeFirst()
}

export async function deleteSession(db: Kysely<DB>, token: string): Promise<void> {
  await db.deleteFrom('sessions').where('token_hash', '=', hashToken(token)).execute()
}

/** The value of one cookie from a Cookie header, or undefined (the kit's parser). */
export { readCookie } from '@gatehouse/kit/credentials.ts'

export function sessionCookie(token: string, ttlMs: number, secure: boolean): string {
  const attrs = [
    `${SESSION_COOKIE}=${token}`,
    'Path=/',
    'HttpOnly',
    'SameSite=Strict',
    `Max-Age=${Math.floor(ttlMs / 1000)}`,
  ]
  if (secure) attrs.push('Secure')
  return attrs.join('; ')
}

export function clearedSessionCookie(secure: boolean): string {
  const attrs = [`${SESSION_COOKIE}=`, 'Path=/', 'HttpOnly', 'SameSite=Strict', 'Max-Age=0']
  if (secure) attrs.push('Secure')
  return attrs.join('; ')
}
