/** Users are keyed by their identity subject (`edge_access:` prefix for edge identities). */
import type { Kysely, Transaction } from 'kysely'
import type { DB, UserRow } from '../db/schema.ts'
import { newId } from '../ids.ts'

type Db = Kysely<DB> | Transaction<DB>

export async function upsertUser(
  db: Db,
  subject: string,
  profile: { name?: string | undefined; email?: string | undefined },
  now: number,
): Promise<UserRow> {
  await db
    .insertInto('users')
    .values({
      id: newId(),
      oidc_subject: subject,
      display_name: profile.name ?? null,
      email: profile.email ?? null,
      created_at: now,
      last_seen_at: now,
    })
    .onConflict((oc) => oc.column('oidc_subject').doNothing())
    .execute()
  const user = await db.selectFrom('users').selectAll().where('oidc_subject', '=', subject).executeTakeFirstOrThrow()
  // Touch at most once a minute (every API call resolves its user), but take a changed
  // name or email at once: a sign-in right after a bearer call must not show the old one.
  const changed =
    (profile.name !== undefined && profile.name !== user.display_name) ||
    (profile.email !== undefined && profile.email !== user.email)
  if (changed || now - Number(user.last_seen_at) > 60_000) {
    const fresh = {
      last_seen_at: now,
      display_name: profile.name ?? user.display_name,
      email: profile.email ?? user.email,
    }
    await db.updateTable('users').set(fresh).where('id', '=', user.id).execute()
    return { ...user, ...fresh }
  }
  return user
}

export function findUserBySubject(db: Db, subject: string): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('oidc_subject', '=', subject).executeTakeFirst()
}

/**
 * How a user is named to others: the display name, else the provider's subject. Never the
 * e-mail address: share pages are seen by people without an account.
 */
export async function publicNameOf(db: Db, userId: string): Promise<string> {
  const u = await db
    .selectFrom('users')
    .select(['display_name', 'oidc_subject'])
    .where('id', '=', userId)
    .executeTakeFirst()
  return u?.display_name ?? u?.oidc_subject ?? 'unknown'
}
