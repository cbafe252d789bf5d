/**
 * Push subscriptions and per-channel choices (migration 0007). A subscription belongs to
 * one reader; every query that changes or lists one is scoped by its owner.
 */
import { randomUUID } from 'node:crypto'
import type { Kysely, Transaction } from 'kysely'
import type { DB, PushMode, PushSubscriptionRow } from '../db/schema.ts'

type Db = Kysely<DB> | Transaction<DB>

export interface NewSubscription {
  userId: string
  endpoint: string
  p256dh: string
  auth: string
  label: string
}

/**
 * Store a browser's subscription for `userId`. The endpoint identifies the browser, so an
 * existing row for it (this reader's, or another reader's who used the same browser before)
 * is replaced: pushes follow whoever subscribed that browser last.
 */
export async function saveSubscription(
  db: Kysely<DB>,
  s: NewSubscription,
): Promise<{ row: PushSubscriptionRow; created: boolean }> {
  return db.transaction().execute(async (trx) => {
    const old = await trx
      .selectFrom('push_subscriptions')
      .select(['id', 'user_id', 'created_at'])
      .where('endpoint', '=', s.endpoint)
      .executeTakeFirst()
    if (old) await trx.deleteFrom('push_subscriptions').where('id', '=', old.id).execute()
    const sameOwner = old?.user_id === s.userId
    const row: PushSubscriptionRow = {
      id: sameOwner ? old.id : randomUUID(),
      user_id: s.userId,
      endpoint: s.endpoint,
      p256dh: s.p256dh,
      auth: s.auth,
      label: s.label,
      created_at: sameOwner ? old.created_at : new Date().toISOString(),
      last_success_at: null,
      last_failure: null,
    }
    await trx.insertInto('push_subscriptions').values(row).execute()
    return { row, created: !sameOwner }
  })
}

export function listSubscriptions(db: Db, userId: string): Promise<PushSubscriptionRow[]> {
  return db
    .selectFrom('push_subscriptions')
    .selectAll()
    .where('user_id', '=', userId)
    .orderBy('created_at')
    .orderBy('id')
    .execute()
}

/** Remove one of the owner's subscriptions; false when it is not theirs or does not exist. */
export async function deleteOwnSubscription(db: Db, userId: string, id: string): Promise<boolean> {
  const r = await db
    .deleteFrom('push_subscriptions')
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .executeTakeFirst()
  return Number(r.numDeletedRows) > 0
}

export async function deleteSubscription(db: Db, id: string): Promise<void> {
  await db.deleteFrom('push_subscriptions').where('id', '=', id).execute()
}

export async function recordSuccess(db: Db, ids: string[]): Promise<void> {
  await db
    .updateTable('push_subscriptions')
    .set({ last_success_at: new Date().toISOString(), last_failure: null })
    .where('id', 'in', ids)
    .execute()
}

export async function recordFailure(db: Db, id: string, failure: string): Promise<void> {
  await db.updateTable('push_subscriptions').set({ last_failure: failure }).where('id', '=', id).execute()
}

export async function preferencesOf(db: Db, userId: string): Promise<Map<string, PushMode>> {
  const rows = await db
    .selectFrom('push_preferences')
    .select(['channel', 'mode'])
    .where('user_id', '=', userId)
    .execute()
  return new Map(rows.map((r) => [r.channel, r.mode]))
}

/** Set a reader's choice for a channel; `all` is the default and is stored as no row. */
export async function setPreference(db: Db, userId: string, channel: string, mode: PushMode): Promise<void> {
  if (mode === 'all') {
    await db.deleteFrom('push_preferences').where('user_id', '=', userId).where('channel', '=', channel).execute()
    return
  }
  await db
    .insertInto('push_preferences')
    .values({ user_id: userId, channel, mode })
    .onConflict((oc) => oc.columns(['user_id', 'channel']).doUpdateSet({ mode }))
    .execute()
}
