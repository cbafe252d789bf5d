/**
 * The user panel's rules (spec Part B, Authentication 6): promote or demote
 * administrators, enable or disable human access, revoke sessions, reset local passwords.
 * An administrator cannot disable themself, and no change may leave the installation
 * without an enabled human administrator.
 *
 * The last-administrator check and the change happen in one transaction that first takes
 * a lock every such change takes (SQLite: `BEGIN IMMEDIATE`, the kit's transactions,
 * serialises writers; PostgreSQL: a transaction-scoped advisory lock), so two concurrent
 * requests demoting or disabling the last two administrators cannot both pass the count.
 */
import { sql } from '@gatehouse/kit/db/database.ts'
import type { Kysely, Transaction } from 'kysely'
import { recordAudit } from '../audit/store.ts'
import type { Reader } from '../auth/guard.ts'
import { hashPassword } from '../auth/passwords.ts'
import type { DB, UserRow } from '../db/schema.ts'
import { errors } from '../errors.ts'
import { appendChange, SESSIONS_ENDED } from '../realtime/changes.ts'
import { findUserByName, updateUser } from './store.ts'

/** pg_advisory_xact_lock key of user-panel changes ("notify-users"). */
const USERS_LOCK = 0x6e7573

export interface UserPatch {
  admin?: boolean
  enabled?: boolean
}

const isEnabledHumanAdmin = (u: UserRow) => u.is_admin === 1 && u.enabled === 1 && u.kind === 'human'

async function lockUsers(tx: Transaction<DB>, kind: 'sqlite' | 'postgres'): Promise<void> {
  if (kind === 'postgres') await sql`select pg_advisory_xact_lock(${USERS_LOCK})`.execute(tx)
}

async function otherEnabledHumanAdmins(tx: Transaction<DB>, userId: string): Promise<number> {
  const row = await tx
    .selectFrom('users')
    .select((eb) => eb.fn.countAll().as('c'))
    .where('is_admin', '=', 1)
    .where('enabled', '=', 1)
    .where('kind', '=', 'human')
    .where('id', '<>', userId)
    .executeTakeFirstOrThrow()
  return Number(row.c)
}

async function target(tx: Transaction<DB>, username: string): Promise<UserRow> {
  const user = await findUserByName(tx, username)
  if (!user) throw errors.user_not_found(username)
  return user
}

export async function changeUser(
  db: Kysely<DB>,
  kind: 'sqlite' | 'postgres',
  actor: Reader,
  username: string,
  patch: UserPatch,
): Promise<UserRow> {
  return db.transaction().execute(async (tx) => {
    await lockUsers(tx, kind)
    const user = await target(tx, username)
    if (user.id === actor.id && patch.enabled === false) {
      throw errors.self_change_refused('you cannot disable your own account')
    }
    const next: UserRow = {
      ...user,
      ...(patch.admin === undefined ? {} : { is_admin: patch.admin ? 1 : 0 }),
      ...(patch.enabled === undefined ? {} : { enabled: patch.enabled ? 1 : 0 }),
    }
    if (isEnabledHumanAdmin(user) && !isEnabledHumanAdmin(next) && (await otherEnabledHumanAdmins(tx, user.id)) === 0) {
      throw errors.last_admin()
    }
    const changes: Record<string, boolean> = {}
    if (next.is_admin !== user.is_admin) changes.admin = next.is_admin === 1
    if (next.enabled !== user.enabled) changes.enabled = next.enabled === 1
    if (Object.keys(changes).length === 0) return user
    await updateUser(tx, user.id, { is_admin: next.is_admin, enabled: next.enabled })
    // A disabled reader's sessions end now (the guard also checks `enabled` on every request).
    if (changes.enabled === false) await tx.deleteFrom('sessions').where('user_id', '=', user.id).execute()
    await recordAudit(tx, actor, 'user.update', user.username, changes)
    // The reader's open streams re-check access (realtime/hub.ts): a disabled reader's close,
    // a promoted or demoted one's visible channels are recomputed.
    await appendChange(tx, kind, {
      kind: 'membership',
      userId: user.id,
      data: { change: 'access', admin: next.is_admin === 1, enabled: next.enabled === 1 },
    })
    return next
  })
}

/**
 * End every session of the reader (browser and desktop); answers how many were in force. The reader's open
 * streams end too (realtime/hub.ts): a stream outlives the request that opened it.
 */
export async function revokeSessions(
  db: Kysely<DB>,
  kind: 'sqlite' | 'postgres',
  actor: Reader,
  username: string,
): Promise<number> {
  return db.transaction().execute(async (tx) => {
    const user = await target(tx, username)
    // The count is of sessions in force, as the user list counts them (the panel's question
    // names that number); expired rows, which sign-in would drop anyway, go too.
    const live = await tx
      .deleteFrom('sessions')
      .where('user_id', '=', user.id)
      .where('expires_at', '>', new Date().toISOString())
      .executeTakeFirst()
    const revoked = Number(live.numDeletedRows)
    await tx.deleteFrom('sessions').where('user_id', '=', user.id).execute()
    await recordAudit(tx, actor, 'user.revoke_sessions', user.username, { revoked })
    await appendChange(tx, kind, { kind: 'membership', userId: user.id, data: { change: SESSIONS_ENDED } })
    return revoked
  })
}

/** Set a new local password; the reader's sessions end. Human readers without OIDC only. */
export async function resetPassword(
  db: Kysely<DB>,
  kind: 'sqlite' | 'postgres',
  actor: Reader,
  username: string,
  password: string,
  bcryptCost: number,
): Promise<void> {
  const hash = await hashPassword(password, bcryptCost)
  await db.transaction().execute(async (tx) => {
    const user = await target(tx, username)
    if (user.kind !== 'human' || user.auth_type === 'oidc') throw errors.password_not_local(username)
    await updateUser(tx, user.id, { password_hash: hash, auth_type: 'local' })
    await tx.deleteFrom('sessions').where('user_id', '=', user.id).execute()
    await recordAudit(tx, actor, 'user.reset_password', user.username)
    await appendChange(tx, kind, { kind: 'membership', userId: user.id, data: { change: SESSIONS_ENDED } })
  })
}
