/** Reader token secrets: issuing one (stored as its hash) and finding the user one belongs to. */
import { randomUUID } from 'node:crypto'
import { generateToken, hashToken } from '@gatehouse/kit/secrets.ts'
import type { Kysely } from 'kysely'
import { recordAudit } from '../audit/store.ts'
import type { Reader } from '../auth/guard.ts'
import type { DB, ReaderTokenRow, UserRow } from '../db/schema.ts'
import { type Db, READER_TOKEN_PATTERN, READER_TOKEN_PREFIX, tokenDetails } from './store.ts'

// A busy script would otherwise write on every read: last use is recorded at most once a minute.
const LAST_USED_GRANULARITY_MS = 60_000

export async function createReaderToken(
  db: Db,
  userId: string,
  name: string,
  expiresAt: string | null = null,
): Promise<{ row: ReaderTokenRow; secret: string }> {
  const secret = `${READER_TOKEN_PREFIX}${generateToken()}`
  const row: ReaderTokenRow = {
    id: randomUUID(),
    user_id: userId,
    name,
    token_hash: hashToken(secret),
    created_at: new Date().toISOString(),
    last_used_at: null,
    expires_at: expiresAt,
  }
  await db.insertInto('reader_tokens').values(row).execute()
  return { row, secret }
}

/**
 * Issue a token for `user` and record it in the audit log under `actor` (the user themselves
 * through the API, `cli:<login>` from `notify token create`), in one transaction.
 */
export function issueReaderToken(
  db: Kysely<DB>,
  actor: Reader,
  user: Pick<UserRow, 'id' | 'username'>,
  name: string,
  expiresAt: string | null = null,
): Promise<{ row: ReaderTokenRow; secret: string }> {
  return db.transaction().execute(async (tx) => {
    const created = await createReaderToken(tx, user.id, name, expiresAt)
    await recordAudit(tx, actor, 'reader_token.create', user.username, tokenDetails(created.row))
    return created
  })
}

/** The enabled user a reader token still in force belongs to, with its expiry; records its use. */
export async function userForReaderToken(
  db: Db,
  secret: string,
): Promise<(UserRow & { credential_expires_at: string | null }) | undefined> {
  if (!READER_TOKEN_PATTERN.test(secret)) return undefined
  const hash = hashToken(secret)
  const now = new Date()
  const user = await db
    .selectFrom('reader_tokens')
    .innerJoin('users', 'users.id', 'reader_tokens.user_id')
    .selectAll('users')
    .select('reader_tokens.expires_at as credential_expires_at')
    .where('reader_tokens.token_hash', '=', hash)
    .where('users.enabled', '=', 1)
    .where((eb) =>
      eb.or([eb('reader_tokens.expires_at', 'is', null), eb('reader_tokens.expires_at', '>', now.toISOString())]),
    )
    .executeTakeFirst()
  if (user) {
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
