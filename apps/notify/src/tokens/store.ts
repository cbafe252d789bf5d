/**
 * Reader API tokens (table reader_tokens): only SHA-256 hashes are stored. Issuing a token and
 * finding its user hash secrets (`credentials.ts`); listing and revoking here need no crypto,
 * so `notify token list` and `revoke` do not load it.
 */
import type { Kysely, Transaction } from 'kysely'
import { recordAudit } from '../audit/store.ts'
import type { Reader } from '../auth/guard.ts'
import type { DB, ReaderTokenRow } from '../db/schema.ts'
import { appendChange, SESSIONS_ENDED } from '../realtime/changes.ts'

export type Db = Kysely<DB> | Transaction<DB>

/** Tokens carry a prefix so a reader token is told from a hook token at a glance (and by guard.ts). */
export const READER_TOKEN_PREFIX = 'ntr_'
export const READER_TOKEN_PATTERN = /^ntr_[A-Za-z0-9_-]{43}$/

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

/**
 * Revoke a token (only when it is `userId`'s, if given): delete it, record it in the audit log
 * and end its owner's open streams, in one transaction. A stream outlives the request that
 * opened it, so without the last step a script's stream would go on after its token stopped
 * working; the owner's other clients reconnect with their own credentials, as after
 * `revokeSessions`. Answers what the token was, or undefined when there is none.
 */
export function revokeReaderToken(
  db: Kysely<DB>,
  kind: 'sqlite' | 'postgres',
  actor: Reader,
  id: string,
  userId?: string,
): Promise<{ name: string; username: string } | undefined> {
  return db.transaction().execute(async (tx) => {
    let q = tx
      .selectFrom('reader_tokens')
      .innerJoin('users', 'users.id', 'reader_tokens.user_id')
      .select(['reader_tokens.name', 'reader_tokens.user_id', 'users.username'])
      .where('reader_tokens.id', '=', id)
    if (userId !== undefined) q = q.where('reader_tokens.user_id', '=', userId)
    const token = await q.executeTakeFirst()
    if (!token) return undefined
    const r = await tx.deleteFrom('reader_tokens').where('id', '=', id).executeTakeFirst()
    if (Number(r.numDeletedRows) === 0) return undefined
    await recordAudit(tx, actor, 'reader_token.revoke', token.username, { id, name: token.name })
    await appendChange(tx, kind, { kind: 'membership', userId: token.user_id, data: { change: SESSIONS_ENDED } })
    return { name: token.name, username: token.username }
  })
}

/** What the audit log keeps of a token: never its secret or hash. */
export function tokenDetails(row: Pick<ReaderTokenRow, 'id' | 'name' | 'expires_at'>): Record<string, string> {
  return { id: row.id, name: row.name, ...(row.expires_at !== null ? { expires_at: row.expires_at } : {}) }
}

export function readerTokenResponse(row: ReaderTokenRow) {
  return {
    id: row.id,
    name: row.name,
    created_at: row.created_at,
    last_used_at: row.last_used_at,
    expires_at: row.expires_at,
  }
}
