/**
 * Reader sessions: a random 256-bit secret in an HttpOnly, SameSite=Strict cookie; only
 * its SHA-256 hash is stored. A session ends after `NOTIFY_SESSION_TTL` without use: each use
 * moves its end forward (at most once an hour, one small write), up to `NOTIFY_SESSION_MAX_AGE`
 * after sign-in, so someone who reads the inbox every day is not signed out every week, and a
 * stolen cookie still stops working at a fixed time. The cookie lasts the maximum age; the
 * server decides when the session has ended.
 */
import { generateToken, hashToken } from '@gatehouse/kit'
import type { Kysely } from 'kysely'
import type { DB, UserRow } from '../db/schema.ts'

export const SESSION_COOKIE = 'notify_session'

/** How long a session lasts, in ms: without use (`sessionTtl`), and at most (`sessionMaxAge`); the config's fields. */
export interface SessionLife {
  sessionTtl: number
  sessionMaxAge: number
}

export async function createSession(db: Kysely<DB>, userId: string, life: SessionLife): Promise<string> {
  const token = generateToken()
  const now = new Date()
  await db
    .insertInto('sessions')
    .values({
      token_hash: hashToken(token),
      user_id: userId,
      created_at: now.toISOString(),
      expires_at: new Date(now.getTime() + Math.min(life.sessionTtl, life.sessionMaxAge)).toISOString(),
      renew_until: new Date(now.getTime() + life.sessionMaxAge).toISOString(),
    })
    .execute()
  await db.updateTable('users').set({ last_sign_in_at: now.toISOString() }).where('id', '=', userId).execute()
  // Expired sessions of this user are dropped on each sign-in, so the table stays small.
  await db.deleteFrom('sessions').where('user_id', '=', userId).where('expires_at', '<=', now.toISOString()).execute()
  return token
}

/** The enabled user an unexpired session belongs to, with the session's expiry and fixed end. */
export async function userForSession(
  db: Kysely<DB>,
  token: string,
): Promise<(UserRow & { credential_expires_at: string; session_renew_until: string | null }) | undefined> {
  return db
    .selectFrom('sessions')
    .innerJoin('users', 'users.id', 'sessions.user_id')
    .selectAll('users')
    .select(['sessions.expires_at as credential_expires_at', 'sessions.renew_until as session_renew_until'])
    .where('sessions.token_hash', '=', hashToken(token))
    .where('sessions.expires_at', '>', new Date().toISOString())
    .where('users.enabled', '=', 1)
    .executeTakeFirst()
}

/**
 * The end a session used at `now` should get, or undefined when it stays: nothing is written
 * until a step (an hour, a tenth of a short lifetime) of the lifetime has passed since the last
 * renewal, and never past its fixed end.
 */
export function renewedExpiry(
  expiresAt: string,
  renewUntil: string | null,
  ttlMs: number,
  now: number,
): string | undefined {
  if (renewUntil === null) return undefined
  const current = Date.parse(expiresAt)
  if (current - now > ttlMs - Math.min(3_600_000, ttlMs / 10)) return undefined
  const next = Math.min(now + ttlMs, Date.parse(renewUntil))
  return next > current ? new Date(next).toISOString() : undefined
}

/** Move a session's end to `expiresAt` (never back: another process may have moved it further). */
export async function renewSession(db: Kysely<DB>, token: string, expiresAt: string): Promise<void> {
  await db
    .updateTable('sessions')
    .set({ expires_at: expiresAt })
    .where('token_hash', '=', hashToken(token))
    .where('expires_at', '<', expiresAt)
    .execute()
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
