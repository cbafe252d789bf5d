/** Reader API tokens (table reader_tokens): only SHA-256 hashes are stored. */
import { randomUUID } from 'node:crypto'
import { generateToken, hashToken } from '@gatehouse/kit/secrets.ts'
import type { Kysely, Transaction } from 'kysely'
import type { DB, ReaderTokenRow, UserRow } from '../db/schema.ts'

type Db = Kysely<DB> | Transaction<DB>

/** Tokens carry a prefix so a reader token is told from a hook token at a glance (and by guard.ts). */
export const READER_TOKEN_PREFIX = 'ntr_'
export const READER_TOKEN_PATTERN = /^ntr_[A-Za-z0-9_-]{43}$/
// A busy script would otherwise write on every read: last use is recorded at most once a minute.
const LAST_USED_GRANULARITY_MS = 60_000

export async function createReaderToken(
  db: Db,
  userId: string,
  name: string,
): Promise<{ row: ReaderTokenRow; secret: string }> {
  const secret = `${READER_TOKEN_PREFIX}${generateToken()}`
  const row: ReaderTokenRow = {
    id: randomUUID(),
    user_id: userId,
    name,
    token_hash: hashToken(secret),
    created_at: new Date().toISOString(),
    last_used_at: null,
  }
  await db.insertInto('reader_tokens').values(row).execute()
  return { row, secret }
}

export function listReaderTokens(db: Db, userId: string): Promise<ReaderTokenRow[]> {
  return db.selectFrom('reader_tokens').selectAll().where('user_id', '=', userId).orderBy('created_at').execute()
}

/** Every reader token (or one user's) with its owner's name, oldest first: for operators (`notify token list`). */
export function listReaderTokensWithOwner(
  db: Db,
  username?: string,
): Promise<(ReaderTokenRow & { username: string })[]> {
  let q = db
    .selectFrom('reader_tokens')
    .innerJoin('users', 'users.id', 'reader_tokens.user_id')
    .selectAll('reader_tokens')
    .select('users.username')
  if (username !== undefined) q = q.where('users.username', '=', username)
  return q.orderBy('reader_tokens.created_at').orderBy('reader_tokens.id').execute()
}

/** Delete a token whoever owns it (an operator revoking it); false when there is none. */
export async function deleteReaderTokenById(db: Db, id: string): Promise<boolean> {
  const r = await db.deleteFrom('reader_tokens').where('id', '=', id).executeTakeFirst()
  return Number(r.numDeletedRows) > 0
}

/** Delete one of the user's tokens; false when it is not theirs or does not exist. */
export async function deleteReaderToken(db: Db, userId: string, id: string): Promise<boolean> {
  const r = await db.deleteFrom('reader_tokens').where('id', '=', id).where('user_id', '=', userId).executeTakeFirst()
  return Number(r.numDeletedRows) > 0
}

/** The enabled user a reader token belongs to, recording its use. */
export async function userForReaderToken(db: Db, secret: string): Promise<UserRow | undefined> {
  if (!READER_TOKEN_PATTERN.test(secret)) return undefined
  const hash = hashToken(secret)
  const user = await db
    .selectFrom('reader_tokens')
    .innerJoin('users', 'users.id', 'reader_tokens.user_id')
    .selectAll('users')
    .where('reader_tokens.token_hash', '=', hash)
    .where('users.enabled', '=', 1)
    .executeTakeFirst()
  if (user) {
    const now = new Date()
    const stale = new Date(now.getTime() - LAST_USED_GRANULARITY_MS).toISOString()
    await db
      .updateTable('reader_tokens')
      .set({ last_used_at: now.toISOString() })
      .where('token_hash', '=', hash)
      .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', stale)]))
      .execute()
  }
  return user
}

export function readerTokenResponse(row: ReaderTokenRow) {
  return { id: row.id, name: row.name, created_at: row.created_at, last_used_at: row.last_used_at }
}
