/**
 * Readers from the identity provider (spec Part B, Authentication 4): keyed by the
 * immutable subject (`sub`) alone. The first sign-in creates a non-administrator human
 * reader with `auth_type` oidc; it never links an existing account, whatever display name
 * or e-mail the provider reports. The user name is derived from the provider's
 * `preferred_username`, e-mail local part or name, and gets a random suffix when taken,
 * so a provider account named like a local reader becomes a different reader.
 */
import { randomBytes, randomUUID } from 'node:crypto'
import { isUniqueViolation } from '@gatehouse/kit'
import type { Kysely } from 'kysely'
import { recordAudit } from '../audit/store.ts'
import type { DB, UserRow } from '../db/schema.ts'
import { USERNAME } from '../names.ts'

export interface IdentityClaims {
  sub: string
  preferred_username?: unknown
  email?: unknown
  name?: unknown
}

/** A user-name base from the claims: lowercase, allowed characters only, at most 48. */
export function usernameBase(claims: IdentityClaims): string {
  const candidates = [
    claims.preferred_username,
    typeof claims.email === 'string' ? claims.email.split('@')[0] : undefined,
    claims.name,
  ]
  for (const c of candidates) {
    if (typeof c !== 'string') continue
    const s = c
      .toLowerCase()
      .normalize('NFKD')
      // Accents go (é -> e) rather than becoming separators.
      .replace(/\p{M}+/gu, '')
      .replace(/[^a-z0-9._-]+/g, '-')
      .replace(/^[^a-z0-9]+/, '')
      .replace(/-+$/, '')
      .slice(0, 48)
    if (USERNAME.test(s)) return s
  }
  return 'user'
}

function findBySubject(db: Kysely<DB>, sub: string): Promise<UserRow | undefined> {
  return db
    .selectFrom('users')
    .selectAll()
    .where('auth_type', '=', 'oidc')
    .where('oidc_subject', '=', sub)
    .executeTakeFirst()
}

/** The reader for this subject, created on first sign-in. */
export async function readerForSubject(db: Kysely<DB>, claims: IdentityClaims): Promise<UserRow> {
  const existing = await findBySubject(db, claims.sub)
  if (existing) return existing
  const base = usernameBase(claims)
  for (let attempt = 0; attempt < 8; attempt++) {
    const row: UserRow = {
      id: randomUUID(),
      username: attempt === 0 ? base : `${base}-${randomBytes(3).toString('hex')}`,
      kind: 'human',
      auth_type: 'oidc',
      oidc_subject: claims.sub,
      password_hash: null,
      is_admin: 0,
      enabled: 1,
      created_at: new Date().toISOString(),
      last_sign_in_at: null,
    }
    try {
      await db.transaction().execute(async (tx) => {
        await tx.insertInto('users').values(row).execute()
        await recordAudit(tx, row, 'user.create', row.username, { auth_type: 'oidc', admin: false })
      })
      return row
    } catch (err) {
      if (!isUniqueViolation(err)) throw err
      // Either the name is taken (try another) or a concurrent first sign-in created the subject.
      const raced = await findBySubject(db, claims.sub)
      if (raced) return raced
    }
  }
  throw new Error('could not choose a free user name for the identity-provider reader')
}
