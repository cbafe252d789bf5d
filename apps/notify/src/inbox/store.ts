/**
 * Inbox queries and reader state (read marks, read cursors, personal archive).
 */
import { sql } from '@gatehouse/kit'
import type { Kysely, Transaction } from 'kysely'
import type { DB, LifecycleState, NotificationRow, Severity } from '../db/schema.ts'
import type { SearchPlan } from './search.ts'

type Db = Kysely<DB> | Transaction<DB>

export interface InboxFilter {
  readerId: string
  /** Channels the reader may read; undefined means all (administrators). */
  channels: string[] | undefined
  channel?: string
  state?: LifecycleState | 'archived'
  severity?: Severity
  /** Search plan from searchPlan(). */
  search: SearchPlan
  unread?: boolean
  before?: number
  /** Only rows with a greater id (the not-yet-indexed tail). */
  after?: number
  /** SQLite: notifications with an id up to this are in the trigram index (indexer.ts). */
  indexedUpTo?: number
  limit: number
}

export type InboxRow = NotificationRow & { is_read: number }

/** Rows the PostgreSQL first attempt looks at (see queryInbox). */
const WINDOW = 5000

/**
 * One page of the inbox, newest first (limit + 1 rows, so the caller sees if more exist).
 *
 * PostgreSQL with several terms or filters: left to itself the planner walks the primary
 * key backwards and filters, which reads the whole table when the terms are common but
 * rarely together; collecting the matches (a bitmap AND of the trigram, channel and
 * severity indexes, then a top-N sort) fixes that but is slower when matches are
 * plentiful. So the newest WINDOW rows (of the channel and severity asked for, if any) are
 * tried first: a full page there is the right answer (every match outside the window is
 * older than all of it); otherwise the matches are collected. (Until 2026-11-27 the collect step gathered ids in a materialized CTE and
 * joined them back: every candidate row was read twice; plans in docs/performance/notify.md.)
 */
export async function queryInbox(db: Db, f: InboxFilter): Promise<InboxRow[]> {
  if (f.indexedUpTo !== undefined && (f.search.match !== undefined || f.search.indexMiss)) {
    // SQLite search: rows newer than the index's high-water mark (a short tail, since the
    // indexer runs every few tens of milliseconds) are scanned with the exact checks
    // alone; they are all newer than any indexed row, so they come first in the page.
    const upTo = f.indexedUpTo
    const tail =
      f.before !== undefined && f.before <= upTo + 1
        ? []
        : await pageQuery(db, { ...f, search: { exact: f.search.exact }, after: upTo }, 'plain')
    if (tail.length > f.limit || f.search.indexMiss) return tail
    const before = f.before === undefined ? upTo + 1 : Math.min(f.before, upTo + 1)
    const indexed = await pageQuery(db, { ...f, before }, 'plain')
    return [...tail, ...indexed].slice(0, f.limit + 1)
  }
  if (!f.search.materialize) return pageQuery(db, f, 'plain')
  const recent = await pageQuery(db, f, 'window')
  if (recent.length > f.limit) return recent
  return pageQuery(db, f, 'collect')
}

function pageQuery(db: Db, f: InboxFilter, mode: PageMode): Promise<InboxRow[]> {
  return pageSelect(db, f, mode).execute() as Promise<InboxRow[]>
}

export type PageMode = 'plain' | 'window' | 'collect'

/** One page query, unexecuted (bench/explain-search.ts compiles it for EXPLAIN ANALYZE). */
export function pageSelect(db: Db, f: InboxFilter, mode: PageMode) {
  const reader = f.readerId
  const windowed = () => {
    let w = db.selectFrom('notifications').selectAll()
    if (f.before !== undefined) w = w.where('id', '<', f.before)
    // The window is the newest rows of the filtered channel and severity (an index walk on
    // (channel, severity, id) or (channel, id)), not the newest rows overall: a match of a
    // word in one channel of twenty fills the page there far more often.
    if (f.channel !== undefined) w = w.where('channel', '=', f.channel)
    if (f.severity !== undefined) w = w.where('severity', '=', f.severity)
    return db.selectFrom(w.orderBy('id', 'desc').limit(WINDOW).as('n')) as unknown as ReturnType<typeof plain>
  }
  const source = mode === 'window' ? windowed() : plain()
  function plain() {
    return db.selectFrom('notifications as n')
  }
  let q = source.selectAll('n').select(
    sql<number>`case when exists (select 1 from notification_reads r where r.user_id = ${reader} and r.notification_id = n.id)
        or n.id <= coalesce((select c.last_read_id from read_cursors c where c.user_id = ${reader} and c.channel = n.channel), 0)
        then 1 else 0 end`.as('is_read'),
  )
  if (f.channels !== undefined) q = q.where('n.channel', 'in', f.channels.length > 0 ? f.channels : [''])
  if (f.channel !== undefined) q = q.where('n.channel', '=', f.channel)
  const archived = sql<boolean>`exists (select 1 from notification_archives a where a.user_id = ${reader} and a.notification_id = n.id)`
  if (f.state === 'archived') q = q.where(archived)
  else {
    q = q.where(sql<boolean>`not ${archived}`)
    if (f.state !== undefined) q = q.where('n.state', '=', f.state)
  }
  if (f.severity !== undefined) q = q.where('n.severity', '=', f.severity)
  if (f.after !== undefined) q = q.where('n.id', '>', f.after)
  // With an index match (SQLite), the trigram index drives the query newest first and
  // the page ends as soon as it is full; the cursor bound is given to the index too.
  const match = f.search.match
  if (match !== undefined) {
    q = q
      .innerJoin(sql<{ rowid: number }>`notification_fts`.as('f'), (j) => j.on(sql<boolean>`f.rowid = n.id`))
      .where(sql<boolean>`f.notification_fts match ${match}`)
    if (f.before !== undefined) q = q.where(sql<boolean>`f.rowid < ${f.before}`)
  } else if (f.before !== undefined) q = q.where('n.id', '<', f.before)
  if (f.unread) {
    q = q
      .where(
        sql<boolean>`n.id > coalesce((select c.last_read_id from read_cursors c where c.user_id = ${reader} and c.channel = n.channel), 0)`,
      )
      .where(
        sql<boolean>`not exists (select 1 from notification_reads r where r.user_id = ${reader} and r.notification_id = n.id)`,
      )
  }
  for (const condition of f.search.exact) q = q.where(condition)
  return (
    q
      // collect: `n.id + 0` is no index order, so the planner cannot walk the primary key
      // backwards; it ANDs index bitmaps (trigrams, channel and severity), reads each matching
      // row once and keeps the newest page in a top-N sort.
      .orderBy(match !== undefined ? sql`f.rowid` : mode === 'collect' ? sql`n.id + 0` : sql`n.id`, 'desc')
      .limit(f.limit + 1)
  )
}

export function findNotification(db: Db, id: number): Promise<NotificationRow | undefined> {
  return db.selectFrom('notifications').selectAll().where('id', '=', id).executeTakeFirst()
}

export async function isRead(db: Db, readerId: string, n: NotificationRow): Promise<boolean> {
  const mark = await db
    .selectFrom('notification_reads')
    .select('notification_id')
    .where('user_id', '=', readerId)
    .where('notification_id', '=', n.id)
    .executeTakeFirst()
  if (mark) return true
  const cursor = await db
    .selectFrom('read_cursors')
    .select('last_read_id')
    .where('user_id', '=', readerId)
    .where('channel', '=', n.channel)
    .executeTakeFirst()
  return cursor !== undefined && Number(cursor.last_read_id) >= n.id
}

export async function markRead(db: Db, readerId: string, notificationId: number): Promise<void> {
  await db
    .insertInto('notification_reads')
    .values({ user_id: readerId, notification_id: notificationId })
    .onConflict((oc) => oc.columns(['user_id', 'notification_id']).doNothing())
    .execute()
}

/** Move a reader's cursor forward (never back) to `lastReadId`. */
export async function advanceCursor(db: Db, readerId: string, channel: string, lastReadId: number): Promise<void> {
  await db
    .insertInto('read_cursors')
    .values({ user_id: readerId, channel, last_read_id: lastReadId })
    .onConflict((oc) =>
      oc
        .columns(['user_id', 'channel'])
        .doUpdateSet((eb) => ({ last_read_id: eb.ref('excluded.last_read_id') }))
        .where('read_cursors.last_read_id', '<', (eb) => eb.ref('excluded.last_read_id')),
    )
    .execute()
}

/** Newest notification id per channel (only the channels given, or all). */
export async function newestIds(
  db: Db,
  channels: string[] | undefined,
): Promise<Array<{ channel: string; id: number }>> {
  let q = db
    .selectFrom('notifications')
    .select(['channel', (eb) => eb.fn.max('id').as('id')])
    .groupBy('channel')
  if (channels !== undefined) q = q.where('channel', 'in', channels.length > 0 ? channels : [''])
  const rows = await q.execute()
  return rows.map((r) => ({ channel: r.channel, id: Number(r.id) }))
}

export async function setArchived(db: Db, readerId: string, notificationId: number, archived: boolean): Promise<void> {
  if (archived) {
    await db
      .insertInto('notification_archives')
      .values({ user_id: readerId, notification_id: notificationId, archived_at: new Date().toISOString() })
      .onConflict((oc) => oc.columns(['user_id', 'notification_id']).doNothing())
      .execute()
  } else {
    await db
      .deleteFrom('notification_archives')
      .where('user_id', '=', readerId)
      .where('notification_id', '=', notificationId)
      .execute()
  }
}

export async function isArchived(db: Db, readerId: string, notificationId: number): Promise<boolean> {
  const row = await db
    .selectFrom('notification_archives')
    .select('notification_id')
    .where('user_id', '=', readerId)
    .where('notification_id', '=', notificationId)
    .executeTakeFirst()
  return row !== undefined
}
