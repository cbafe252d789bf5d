/**
 * The inbox API (paths ours; the spec leaves them unshown). Every route needs a reader.
 *   GET  /api/v1/notifications                    query: q, channel, state, severity, unread, limit (<=200), before
 *   GET  /api/v1/notifications/{id}               one notification
 *   GET  /api/v1/notifications/{id}/activity      its immutable activity events
 *   POST /api/v1/notifications/{id}/acknowledge   operator, channel_admin or administrator
 *   POST /api/v1/notifications/{id}/resolve       same
 *   POST /api/v1/notifications/{id}/read          mark one read
 *   POST /api/v1/notifications/{id}/archive       hide from the reader's normal history
 *   POST /api/v1/notifications/{id}/restore       bring it back from the archived view
 *   POST /api/v1/channels/{id}/read               mark the channel read (cursor to its newest item)
 *   POST /api/v1/notifications/read-all           mark every readable channel read, atomically
 */
import type { HttpApp } from '@gatehouse/kit'
import { Type } from 'typebox'
import { type Reader, readerOf } from '../auth/guard.ts'
import { readableChannelNames, visibleChannel } from '../channels/access.ts'
import type { Context } from '../context.ts'
import type { NotificationRow } from '../db/schema.ts'
import { appendChange } from '../realtime/changes.ts'
import { decodeCursor, encodeCursor } from './cursor.ts'
import { indexedUpTo } from './indexer.ts'
import { activity, transition, visibleNotification } from './lifecycle.ts'
import { MAX_QUERY_LENGTH, searchPlan, searchTerms } from './search.ts'
import { advanceCursor, isArchived, isRead, markRead, newestIds, queryInbox, setArchived } from './store.ts'
import { TrigramStats } from './trigram-stats.ts'

export const MAX_LIMIT = 200
export const DEFAULT_LIMIT = 50

const Query = Type.Object(
  {
    q: Type.Optional(Type.String({ maxLength: MAX_QUERY_LENGTH })),
    channel: Type.Optional(Type.String({ maxLength: 64 })),
    state: Type.Optional(
      Type.Union(['received', 'firing', 'acknowledged', 'resolved', 'archived'].map((s) => Type.Literal(s))),
    ),
    severity: Type.Optional(
      Type.Union(['info', 'success', 'warning', 'error', 'critical'].map((s) => Type.Literal(s))),
    ),
    unread: Type.Optional(Type.Boolean()),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_LIMIT })),
    before: Type.Optional(Type.String({ maxLength: 64 })),
  },
  { additionalProperties: false },
)

const IdParams = Type.Object({ id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }) })

export function notificationResponse(n: NotificationRow, read: boolean, extra: Record<string, unknown> = {}) {
  return {
    id: Number(n.id),
    channel: n.channel,
    kind: n.kind,
    title: n.title,
    body: n.body,
    source: n.source,
    username: n.username,
    severity: n.severity,
    state: n.state,
    created_at: n.created_at,
    read,
    content: JSON.parse(n.content) as unknown,
    ...extra,
  }
}

export function inboxRoutes(app: HttpApp, ctx: Context) {
  const { guard } = ctx
  const { db, kind } = ctx.database
  const stats = kind === 'sqlite' ? new TrigramStats(db) : undefined
  const signedIn = { onRequest: guard.signedIn }
  const byId = (summary: string) => ({ ...signedIn, schema: { params: IdParams, summary, tags: ['inbox'] } })

  app.get(
    '/api/v1/notifications',
    { ...signedIn, schema: { summary: 'Search and list notifications', tags: ['inbox'], querystring: Query } },
    async (req) => {
      const reader = readerOf(req)
      const query = req.query
      if (query.channel !== undefined) await visibleChannel(db, reader, query.channel)
      const limit = query.limit ?? DEFAULT_LIMIT
      const before = query.before !== undefined ? decodeCursor(query.before) : undefined
      // Read before the plan: every notification up to it is in the trigram index (SQLite).
      const upTo = kind === 'sqlite' ? await indexedUpTo(db) : undefined
      const search = await searchPlan(
        kind,
        stats,
        searchTerms(query.q ?? ''),
        query.channel,
        query.severity !== undefined || query.state !== undefined,
      )
      if (search === undefined) return { notifications: [], next_cursor: null }
      const rows = await queryInbox(db, {
        readerId: reader.id,
        channels: await readableChannelNames(db, reader),
        ...(query.channel !== undefined ? { channel: query.channel } : {}),
        ...(query.state !== undefined ? { state: query.state as never } : {}),
        ...(query.severity !== undefined ? { severity: query.severity as never } : {}),
        ...(before !== undefined ? { before } : {}),
        unread: query.unread === true,
        search,
        ...(upTo !== undefined ? { indexedUpTo: upTo } : {}),
        limit,
      })
      const page = rows.slice(0, limit)
      return {
        notifications: page.map((r) => notificationResponse(r, Number(r.is_read) === 1)),
        next_cursor: rows.length > limit ? encodeCursor(Number(page.at(-1)!.id)) : null,
      }
    },
  )

  const one = async (reader: Reader, id: number) => {
    const { notification } = await visibleNotification(db, reader, id)
    return notificationResponse(notification, await isRead(db, reader.id, notification), {
      archived: await isArchived(db, reader.id, id),
    })
  }

  app.get('/api/v1/notifications/:id', byId('Get a notification'), async (req) => ({
    notification: await one(readerOf(req), req.params.id),
  }))

  app.get('/api/v1/notifications/:id/activity', byId("List a notification's activity events"), async (req) => ({
    events: await activity(db, readerOf(req), req.params.id),
  }))

  for (const action of ['acknowledge', 'resolve'] as const) {
    app.post(
      `/api/v1/notifications/:id/${action}`,
      byId(`${action === 'acknowledge' ? 'Acknowledge' : 'Resolve'} a notification`),
      async (req) => {
        const reader = readerOf(req)
        const { changed } = await transition(db, kind, reader, req.params.id, action)
        if (changed) ctx.stream.wake()
        return { notification: await one(reader, req.params.id), changed }
      },
    )
  }

  app.post('/api/v1/notifications/:id/read', byId('Mark a notification read'), async (req) => {
    const reader = readerOf(req)
    const { notification } = await visibleNotification(db, reader, req.params.id)
    await db.transaction().execute(async (tx) => {
      await markRead(tx, reader.id, req.params.id)
      await appendChange(tx, kind, {
        kind: 'read',
        channel: notification.channel,
        userId: reader.id,
        data: { channel: notification.channel, notification_ids: [req.params.id] },
      })
    })
    ctx.stream.wake()
    return { notification: await one(reader, req.params.id) }
  })

  for (const [action, archived] of [
    ['archive', true],
    ['restore', false],
  ] as const) {
    app.post(
      `/api/v1/notifications/:id/${action}`,
      byId(archived ? 'Archive a notification (hide it from the normal history)' : 'Restore an archived notification'),
      async (req) => {
        const reader = readerOf(req)
        const { notification } = await visibleNotification(db, reader, req.params.id)
        await db.transaction().execute(async (tx) => {
          await setArchived(tx, reader.id, req.params.id, archived)
          await appendChange(tx, kind, {
            kind: 'archive',
            channel: notification.channel,
            userId: reader.id,
            data: { id: req.params.id, channel: notification.channel, archived },
          })
        })
        ctx.stream.wake()
        return { notification: await one(reader, req.params.id) }
      },
    )
  }

  app.post(
    '/api/v1/channels/:id/read',
    {
      ...signedIn,
      schema: {
        summary: 'Mark a channel read',
        tags: ['inbox'],
        params: Type.Object({ id: Type.String({ maxLength: 64 }) }),
      },
    },
    async (req) => {
      const reader = readerOf(req)
      const { channel } = await visibleChannel(db, reader, req.params.id)
      const newest = await db.transaction().execute(async (tx) => {
        const newest = await newestIds(tx, [channel.name])
        if (newest[0]) await advanceCursor(tx, reader.id, channel.name, newest[0].id)
        await appendChange(tx, kind, {
          kind: 'read',
          channel: channel.name,
          userId: reader.id,
          data: { channels: [{ channel: channel.name, last_read_id: newest[0]?.id ?? 0 }] },
        })
        return newest
      })
      ctx.stream.wake()
      return { channel: channel.name, last_read_id: newest[0]?.id ?? 0 }
    },
  )

  app.post(
    '/api/v1/notifications/read-all',
    { ...signedIn, schema: { summary: 'Mark every readable channel read', tags: ['inbox'] } },
    async (req) => {
      const reader = readerOf(req)
      const cursors = await db.transaction().execute(async (tx) => {
        const newest = await newestIds(tx, await readableChannelNames(tx, reader))
        for (const { channel, id } of newest) await advanceCursor(tx, reader.id, channel, id)
        await appendChange(tx, kind, {
          kind: 'read',
          userId: reader.id,
          data: { channels: newest.map((c) => ({ channel: c.channel, last_read_id: c.id })) },
        })
        return newest
      })
      ctx.stream.wake()
      return { channels: cursors.map((c) => ({ channel: c.channel, last_read_id: c.id })) }
    },
  )
}
