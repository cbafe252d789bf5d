/**
 * Desktop sign-in (spec Part B, Authentication 4; the design is ours, in the spirit of the
 * OAuth device flow, RFC 8628):
 *
 * 1. The desktop app starts a request and receives a secret `device_code` (kept by the
 *    app), a short `user_code` it shows to the reader, and a `verification_url` it opens
 *    in the browser (`$NOTIFY_PUBLIC_URL/#/desktop/<request_id>`).
 * 2. In the browser, a signed-in reader sees which app asks (name, address, time) and must
 *    type the code the app shows; the server compares it with the request's code in
 *    constant time. A wrong code counts against the request: after 5 the request fails for
 *    good. The reader may also deny. Typing (rather than clicking a code the page shows)
 *    means the reader has the app in front of them: a link sent by someone else does not
 *    suffice to approve their app.
 * 3. The app polls with its device code. Until approval it gets 428 (pending); after it,
 *    exactly one poll turns the approval into a session (the row moves `approved` -> `used`
 *    in one conditional update, so two polls cannot both win), answered once as a bearer
 *    session token `nts_...`. Expired, denied, failed, used and unknown requests never
 *    yield a session.
 *
 * Requests live 10 minutes. Device codes (32 random bytes) and user codes are stored only
 * as SHA-256 hashes. Starting and polling are rate-limited per client address (routes.ts).
 */
import { randomInt, randomUUID } from 'node:crypto'
import { generateToken, hashToken, safeEqual } from '@gatehouse/kit'
import type { Kysely } from 'kysely'
import type { Reader } from '../auth/guard.ts'
import { createSession, type SessionLife } from '../auth/sessions.ts'
import type { DB, DesktopLoginRow, UserRow } from '../db/schema.ts'
import { errors } from '../errors.ts'

export const DESKTOP_TTL_MS = 10 * 60_000
export const MAX_CODE_ATTEMPTS = 5
export const POLL_INTERVAL_S = 2
/** Bearer prefix of a session handed to a desktop app (guard.ts accepts it). */
export const DESKTOP_SESSION_PREFIX = 'nts_'
// Consonants only (RFC 8628 section 6.1): no vowels, so no words; no 0/O or 1/I/L confusion.
const ALPHABET = 'BCDFGHJKMNPQRSTVWXZ'
const CODE_LENGTH = 8

export function newUserCode(): string {
  let s = ''
  for (let i = 0; i < CODE_LENGTH; i++) s += ALPHABET[randomInt(ALPHABET.length)]
  return `${s.slice(0, 4)}-${s.slice(4)}`
}

/** Upper case, separators and spaces dropped: `bcdf ghjk` and `BCDF-GHJK` are the same code. */
export function normalizeUserCode(text: string): string {
  return text.toUpperCase().replace(/[\s-]+/g, '')
}

export interface StartedDesktopLogin {
  row: DesktopLoginRow
  deviceCode: string
  userCode: string
}

export async function startDesktopLogin(
  db: Kysely<DB>,
  clientName: string,
  clientAddress: string,
): Promise<StartedDesktopLogin> {
  const deviceCode = generateToken()
  const userCode = newUserCode()
  const now = Date.now()
  const row: DesktopLoginRow = {
    id: randomUUID(),
    device_code_hash: hashToken(deviceCode),
    user_code_hash: hashToken(normalizeUserCode(userCode)),
    client_name: clientName,
    client_address: clientAddress,
    status: 'pending',
    user_id: null,
    failed_attempts: 0,
    created_at: new Date(now).toISOString(),
    expires_at: new Date(now + DESKTOP_TTL_MS).toISOString(),
  }
  await db.insertInto('desktop_logins').values(row).execute()
  // Finished and abandoned requests are dropped a day after they expired.
  await db
    .deleteFrom('desktop_logins')
    .where('expires_at', '<', new Date(now - 86_400_000).toISOString())
    .execute()
  return { row, deviceCode, userCode }
}

const expired = (row: DesktopLoginRow) => row.expires_at <= new Date().toISOString()

/** A pending, unexpired request for the browser to show; anything else is desktop_login_failed. */
export async function pendingRequest(db: Kysely<DB>, id: string): Promise<DesktopLoginRow> {
  const row = await db.selectFrom('desktop_logins').selectAll().where('id', '=', id).executeTakeFirst()
  if (!row) throw errors.desktop_login_failed('no such desktop sign-in request')
  if (expired(row)) throw errors.desktop_login_failed('this desktop sign-in request expired; start again in the app')
  if (row.status !== 'pending')
    throw errors.desktop_login_failed(`this desktop sign-in request is already ${row.status}`)
  return row
}

/** Approve with the code the reader typed; a mismatch counts, the fifth fails the request. */
export async function approve(db: Kysely<DB>, reader: Reader, id: string, typed: string): Promise<DesktopLoginRow> {
  const row = await pendingRequest(db, id)
  if (!safeEqual(hashToken(normalizeUserCode(typed)), row.user_code_hash)) {
    const attempts = row.failed_attempts + 1
    await db
      .updateTable('desktop_logins')
      .set({ failed_attempts: attempts, ...(attempts >= MAX_CODE_ATTEMPTS ? { status: 'failed' } : {}) })
      .where('id', '=', id)
      .where('status', '=', 'pending')
      .execute()
    throw errors.desktop_code_mismatch(Math.max(0, MAX_CODE_ATTEMPTS - attempts))
  }
  const r = await db
    .updateTable('desktop_logins')
    .set({ status: 'approved', user_id: reader.id })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .executeTakeFirst()
  if (Number(r.numUpdatedRows) !== 1)
    throw errors.desktop_login_failed('this desktop sign-in request changed meanwhile')
  return { ...row, status: 'approved', user_id: reader.id }
}

export async function deny(db: Kysely<DB>, id: string): Promise<void> {
  await pendingRequest(db, id)
  await db
    .updateTable('desktop_logins')
    .set({ status: 'denied' })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .execute()
}

/** The app's poll: 428 while pending; once approved, one session, once. */
export async function redeem(
  db: Kysely<DB>,
  deviceCode: string,
  life: SessionLife,
): Promise<{ token: string; user: UserRow; expiresAt: string }> {
  const row = await db
    .selectFrom('desktop_logins')
    .selectAll()
    .where('device_code_hash', '=', hashToken(deviceCode))
    .executeTakeFirst()
  if (!row) throw errors.desktop_login_failed('unknown device code')
  if (row.status === 'used') throw errors.desktop_login_failed('this desktop sign-in was already used')
  if (expired(row)) throw errors.desktop_login_failed('this desktop sign-in request expired; start again')
  if (row.status === 'pending') throw errors.desktop_login_pending()
  if (row.status !== 'approved' || row.user_id === null) {
    throw errors.desktop_login_failed(`this desktop sign-in request was ${row.status}`)
  }
  const won = await db
    .updateTable('desktop_logins')
    .set({ status: 'used' })
    .where('id', '=', row.id)
    .where('status', '=', 'approved')
    .executeTakeFirst()
  if (Number(won.numUpdatedRows) !== 1) throw errors.desktop_login_failed('this desktop sign-in was already used')
  const user = await db.selectFrom('users').selectAll().where('id', '=', row.user_id).executeTakeFirst()
  if (user?.enabled !== 1) throw errors.desktop_login_failed('the approving account is disabled')
  const token = await createSession(db, user.id, life)
  return {
    token: `${DESKTOP_SESSION_PREFIX}${token}`,
    user,
    // Without use; each use moves it forward, up to the maximum age (auth/sessions.ts).
    expiresAt: new Date(Date.now() + Math.min(life.sessionTtl, life.sessionMaxAge)).toISOString(),
  }
}
