/**
 * Unread counts per channel for the navigation (path ours):
 *   GET /api/v1/unread    {channels: [{channel, unread, more}], total, more}
 *
 * An item is unread for a reader when it is newer than the reader's cursor of its channel,
 * not marked read on its own and not archived by them: the inbox's `unread=true` rule.
 * Counting stops at UNREAD_CAP per channel (`more: true` past it; the client shows "99+"),
 * so a channel never read, with a million items, costs a bounded index walk.
 */
import type { HttpApp } from '@gatehouse/kit'
import { sql } from '@gatehouse/kit'
import type { Kysely, Transaction } from 'kysely'
import { readerOf } from '../auth/guard.ts'
import { listVisibleChannels } from '../channels/store.ts'
import type { Context } from '../context.ts'
import type { DB } from '../db/schema.ts'

type Db = Kysely<DB> | Transaction<DB>

/** Counted per channel; more are reported as `more: true`. */
export const UNREAD_CAP = 99

export async function unreadCount(db: Db, readerId: string, channel: string): Promise<number> {
  const cursor = await db
    .selectFrom('read_cursors')
    .select('last_read_id')
    .where('user_id', '=', readerId)
    .where('channel', '=', channel)
    .executeTakeFirst()
  const page = db
    .selectFrom('notifications as n')
    .select('n.id')
    .where('n.channel', '=', channel)
    .where('n.id', '>', Number(cursor?.last_read_id ?? 0))
    .where(
      sql<boolean>`not exists (select 1 from notification_reads r where r.user_id = ${readerId} and r.notification_id = n.id)`,
    )
    .where(
      sql<boolean>`not exists (select 1 from notification_archives a where a.user_id = ${readerId} and a.notification_id = n.id)`,
    )
    .orderBy('n.id', 'desc')
    .limit(UNREAD_CAP + 1)
  const row = await db
    .selectFrom(page.as('p'))
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirstOrThrow()
  return Number(row.n)
}

export function unreadRoutes(app: HttpApp, ctx: Context) {
  const { db } = ctx.database
  app.get(
    '/api/v1/unread',
    { onRequest: ctx.guard.signedIn, schema: { summary: 'Count unread notifications per channel', tags: ['inbox'] } },
    async (req) => {
      const reader = readerOf(req)
      const channels = await listVisibleChannels(db, reader)
      const counts = []
      let total = 0
      for (const c of channels) {
        const n = await unreadCount(db, reader.id, c.name)
        total += Math.min(n, UNREAD_CAP)
        counts.push({ channel: c.name, unread: Math.min(n, UNREAD_CAP), more: n > UNREAD_CAP })
      }
      return { channels: counts, total, more: counts.some((c) => c.more) }
    },
  )
}
