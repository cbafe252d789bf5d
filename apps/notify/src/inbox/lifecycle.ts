/**
 * Lifecycle transitions (spec Part B, States and transitions):
 *   received|firing --acknowledge--> acknowledged
 *   received|firing|acknowledged --resolve--> resolved
 * A repeated request for the state a notification is already in changes nothing (200,
 * changed:false, no event); acknowledging a resolved notification is a 409. Each accepted
 * transition writes one immutable activity event attributed to the reader, in the same
 * transaction as the state change. The update is conditional on the state read, so two
 * nodes racing on one notification record exactly one event per transition.
 */
import type { Kysely, Transaction } from 'kysely'
import type { Reader } from '../auth/guard.ts'
import { canOperate, visibleChannel } from '../channels/access.ts'
import type { DB, LifecycleState, NotificationRow } from '../db/schema.ts'
import { errors } from '../errors.ts'
import { appendChange } from '../realtime/changes.ts'
import { findNotification } from './store.ts'

export type LifecycleAction = 'acknowledge' | 'resolve'

const TARGET: Record<LifecycleAction, LifecycleState> = { acknowledge: 'acknowledged', resolve: 'resolved' }
const FROM: Record<LifecycleAction, LifecycleState[]> = {
  acknowledge: ['received', 'firing'],
  resolve: ['received', 'firing', 'acknowledged'],
}

/** The notification when the reader may see it; a hidden one is reported as missing. */
export async function visibleNotification(
  db: Kysely<DB> | Transaction<DB>,
  reader: Reader,
  id: number,
): Promise<{ notification: NotificationRow; role: Awaited<ReturnType<typeof visibleChannel>>['role'] }> {
  const notification = await findNotification(db, id)
  if (!notification) throw errors.notification_not_found(String(id))
  try {
    const { role } = await visibleChannel(db, reader, notification.channel)
    return { notification, role }
  } catch (err) {
    if ((err as { code?: string }).code === 'channel_not_found') throw errors.notification_not_found(String(id))
    throw err
  }
}

export async function transition(
  db: Kysely<DB>,
  kind: 'sqlite' | 'postgres',
  reader: Reader,
  id: number,
  action: LifecycleAction,
): Promise<{ notification: NotificationRow; changed: boolean }> {
  const target = TARGET[action]
  for (let attempt = 0; ; attempt++) {
    const result = await db.transaction().execute(async (tx) => {
      const { notification, role } = await visibleNotification(tx, reader, id)
      if (!canOperate(reader, role))
        throw errors.role_required(action === 'acknowledge' ? 'acknowledging' : 'resolving')
      if (notification.state === target) return { notification, changed: false }
      if (!FROM[action].includes(notification.state)) throw errors.invalid_transition(notification.state, target)
      const updated = await tx
        .updateTable('notifications')
        .set({ state: target })
        .where('id', '=', id)
        .where('state', '=', notification.state)
        .executeTakeFirst()
      if (Number(updated.numUpdatedRows) !== 1) return undefined
      const event = {
        action,
        from_state: notification.state,
        to_state: target,
        username: reader.username,
        created_at: new Date().toISOString(),
      }
      const inserted = await tx
        .insertInto('notification_events')
        .values({ notification_id: id, user_id: reader.id, ...event })
        .returning('id')
        .executeTakeFirstOrThrow()
      await appendChange(tx, kind, {
        kind: 'lifecycle',
        channel: notification.channel,
        data: { id, channel: notification.channel, state: target, event: { id: Number(inserted.id), ...event } },
      })
      return { notification: { ...notification, state: target }, changed: true }
    })
    if (result) return result
    if (attempt >= 3) throw errors.invalid_transition('a concurrently changed state', target)
  }
}

export async function activity(db: Kysely<DB>, reader: Reader, id: number) {
  await visibleNotification(db, reader, id)
  return db
    .selectFrom('notification_events')
    .select(['id', 'action', 'from_state', 'to_state', 'username', 'created_at'])
    .where('notification_id', '=', id)
    .orderBy('id')
    .execute()
}
