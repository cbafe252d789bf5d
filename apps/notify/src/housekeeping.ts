/**
 * Hourly cleanup of what would otherwise only grow:
 * - notifications past `NOTIFY_RETENTION` (0, the default, keeps them), unless still open
 *   (firing or acknowledged: they go once resolved and old), with what hangs on them: activity
 *   events (migration 0013 lets the retention, and nothing else, delete them), read and
 *   archive marks, action contexts, and on SQLite their trigram index entries. Action
 *   invocations and the audit log stay.
 * - the realtime stream's change log (`stream_changes`) past `NOTIFY_STREAM_RETENTION`: every
 *   acknowledgement, Mark read and archive adds a row, and a row only serves streams resuming
 *   from before it. A stream resuming from before the oldest kept row gets a `reset` event
 *   (realtime/hub.ts). The newest row always stays: the hub starts at it.
 * - sessions past their expiry: they are swept per reader at sign-in, so a reader who never
 *   signs in again would keep them forever.
 * - administrative audit entries past `NOTIFY_AUDIT_RETENTION` (a year; 0 keeps them): migration
 *   0015 lets the retention, and nothing else, delete them.
 * - reader API tokens 30 days past their expiry: until then `notify token list` shows them as
 *   expired, so whoever owns the script that stopped can tell why.
 * - sign-in attempt counts (auth/throttle.ts) whose window has ended.
 * Several processes on one database may run it at once: each step is idempotent. Rows go in
 * batches (kit `deleteBefore`), so a backlog never holds the database for long, and a step
 * with nothing due only reads: an hour on a database turned read-only logs nothing.
 */
import type { AppMetrics, DatabaseKind, Logger } from '@gatehouse/kit'
import { deleteBefore, firstIdFrom } from '@gatehouse/kit/db/batched-delete.ts'
import { sql } from '@gatehouse/kit/db/database.ts'
import { type PeriodicJob, periodic } from '@gatehouse/kit/periodic.ts'
import type { Kysely } from 'kysely'
import type { DB, LifecycleState } from './db/schema.ts'

const INTERVAL_MS = 3_600_000
/** The first run waits a little: a process starting up has other work first. */
const FIRST_RUN_MS = 60_000

/** Remove the stream changes recorded before `beforeMs`, all but the newest; returns how many. */
export async function pruneStreamChanges(db: Kysely<DB>, beforeMs: number): Promise<number> {
  const newest = await db
    .selectFrom('stream_changes')
    .select((eb) => eb.fn.max('id').as('id'))
    .executeTakeFirst()
  if (newest?.id == null) return 0
  // Ids grow with time, so the first recent row ends the range.
  const firstKept = await firstIdFrom(db, 'stream_changes', 'created_at', new Date(beforeMs).toISOString())
  const keepFrom = Math.min(firstKept ?? Number.POSITIVE_INFINITY, Number(newest.id))
  return deleteBefore(db, 'stream_changes', 'id', keepFrom)
}

/** States a notification may be removed in; firing and acknowledged ones are open incidents. */
const CLOSED: LifecycleState[] = ['received', 'resolved']

/**
 * Remove the closed notifications created before `beforeMs`, with what hangs on them, `batch`
 * per transaction; returns how many. A notification acknowledged meanwhile is left alone: each
 * transaction tests the states again as it deletes (SQLite: under its write lock; PostgreSQL: the
 * delete's own condition, checked again on a row another transaction changed).
 *
 * The id range only narrows the search: with no notification recent when it is read, it is
 * open-ended, and one arriving meanwhile (the batches of a backlog take a while) falls inside
 * it. So the age is tested again, with the state, by every candidate read and every delete.
 */
export async function purgeNotifications(
  db: Kysely<DB>,
  kind: DatabaseKind,
  beforeMs: number,
  batch = 500,
): Promise<number> {
  const before = new Date(beforeMs).toISOString()
  // Ids grow with time, so the first recent notification ends the range.
  const end = (await firstIdFrom(db, 'notifications', 'created_at', before)) ?? Number.MAX_SAFE_INTEGER
  let after = 0
  let total = 0
  for (;;) {
    const candidates = await db
      .selectFrom('notifications')
      .select('id')
      .where('id', '>', after)
      .where('id', '<', end)
      .where('state', 'in', CLOSED)
      .where('created_at', '<', before)
      .orderBy('id')
      .limit(batch)
      .execute()
    if (candidates.length === 0) return total
    after = Number(candidates.at(-1)!.id)
    const listed = candidates.map((c) => Number(c.id))
    total += await db.transaction().execute(async (trx) => {
      // First a write: SQLite's write lock is held from here, so the states read next stay so.
      await trx
        .insertInto('notification_purges')
        .values(listed.map((id) => ({ id })))
        .execute()
      if (kind === 'postgres') {
        // One statement: the notifications still closed go (a concurrent acknowledgement is
        // re-checked row by row), and their dependants with them (foreign keys are checked at
        // the statement's end). Per row, a lock and a statement each cost what the delete does.
        const r = await sql<{ n: string }>`with closed as (
            delete from notifications where id in (${sql.join(listed)}) and state in ('received', 'resolved')
              and created_at < ${before}
            returning id),
          e as (delete from notification_events where notification_id in (select id from closed)),
          r as (delete from notification_reads where notification_id in (select id from closed)),
          a as (delete from notification_archives where notification_id in (select id from closed)),
          c as (delete from action_contexts where notification_id in (select id from closed))
          select count(*) as n from closed`.execute(trx)
        await trx.deleteFrom('notification_purges').execute()
        return Number(r.rows[0]?.n ?? 0)
      }
      const closed = trx
        .selectFrom('notifications')
        .select('id')
        .where('id', 'in', listed)
        .where('state', 'in', CLOSED)
        .where('created_at', '<', before)
      const ids = (await closed.execute()).map((r) => Number(r.id))
      if (ids.length > 0) {
        // External-content FTS5 forgets a row when told its indexed text; rows past the
        // indexer's mark were never indexed.
        await sql`insert into notification_fts (notification_fts, rowid, search_text)
          select 'delete', id, search_text from notifications where id in (${sql.join(ids)})
            and id <= (select high_water from search_index_state where id = 1)`.execute(trx)
        for (const table of [
          'notification_events',
          'notification_reads',
          'notification_archives',
          'action_contexts',
        ] as const)
          await trx.deleteFrom(table).where('notification_id', 'in', ids).execute()
        await trx.deleteFrom('notifications').where('id', 'in', ids).execute()
      }
      await trx.deleteFrom('notification_purges').execute()
      return ids.length
    })
    await new Promise((resolve) => setImmediate(resolve))
  }
}

/** Remove the sessions expired before `nowMs`; returns how many. */
export function sweepSessions(db: Kysely<DB>, nowMs: number): Promise<number> {
  return deleteBefore(db, 'sessions', 'expires_at', new Date(nowMs).toISOString())
}

/** Remove the sign-in attempt counts whose window ended before `nowMs` (auth/throttle.ts). */
export function sweepLoginAttempts(db: Kysely<DB>, nowMs: number): Promise<number> {
  return deleteBefore(db, 'login_attempts', 'window_end', new Date(nowMs).toISOString())
}

/**
 * Remove the audit entries created before `beforeMs`, `batch` per transaction; returns how
 * many. The cutoff goes in `audit_purges` for the transaction's length: the immutability
 * triggers let a delete through only for entries older than a cutoff listed there.
 */
export async function purgeAudit(db: Kysely<DB>, beforeMs: number, batch = 500): Promise<number> {
  const before = new Date(beforeMs).toISOString()
  // Most hours nothing is due: one indexed read then, not a write transaction (which would also
  // fail, and be logged, every hour on a database that has turned read-only).
  const due = await db
    .selectFrom('admin_audit')
    .select('id')
    .where('created_at', '<', before)
    .limit(1)
    .executeTakeFirst()
  if (due === undefined) return 0
  let total = 0
  for (;;) {
    const removed = await db.transaction().execute(async (trx) => {
      await trx.insertInto('audit_purges').values({ before }).execute()
      const ids = await trx
        .selectFrom('admin_audit')
        .select('id')
        .where('created_at', '<', before)
        .orderBy('created_at')
        .limit(batch)
        .execute()
      if (ids.length > 0)
        await trx
          .deleteFrom('admin_audit')
          .where(
            'id',
            'in',
            ids.map((r) => Number(r.id)),
          )
          .execute()
      await trx.deleteFrom('audit_purges').where('before', '=', before).execute()
      return ids.length
    })
    total += removed
    if (removed < batch) return total
    await new Promise((resolve) => setImmediate(resolve))
  }
}

/** How long an expired reader token stays listed (as expired) before housekeeping removes it. */
export const EXPIRED_TOKEN_KEPT_MS = 30 * 86_400_000

/** Remove the reader tokens that expired before `beforeMs`; returns how many. */
export function sweepReaderTokens(db: Kysely<DB>, beforeMs: number): Promise<number> {
  // Tokens that never expire (a null `expires_at`) are never below the cutoff.
  return deleteBefore(db, 'reader_tokens', 'expires_at', new Date(beforeMs).toISOString())
}

/** `run()` runs it now (tests); a run already going is joined. */
export type Housekeeping = PeriodicJob

export interface HousekeepingSettings {
  /** Notifications older than this go (closed ones); 0 keeps them. */
  retentionMs: number
  streamRetentionMs: number
  /** Audit entries older than this go; 0 keeps them. */
  auditRetentionMs: number
  /** Between runs, and before the first (tests); default an hour, the first after a minute. */
  intervalMs?: number
}

export function startHousekeeping(
  db: Kysely<DB>,
  kind: DatabaseKind,
  settings: HousekeepingSettings,
  log: Logger,
  metrics?: Pick<AppMetrics, 'counter' | 'gauge'>,
): Housekeeping {
  const removedTotal = metrics?.counter(
    'housekeeping_removed_total',
    'Rows the hourly cleanup removed: notifications past NOTIFY_RETENTION, stream changes past NOTIFY_STREAM_RETENTION, expired sessions, audit entries past NOTIFY_AUDIT_RETENTION, reader tokens expired for 30 days, sign-in attempt counts whose window ended',
    ['what'],
  )
  return periodic(
    async () => {
      const now = Date.now()
      if (settings.retentionMs > 0) {
        const removed = await purgeNotifications(db, kind, now - settings.retentionMs)
        removedTotal?.inc({ what: 'notifications' }, removed)
        if (removed > 0)
          log.info({ removed }, 'notifications older than NOTIFY_RETENTION removed (open ones stay until resolved)')
      }
      if (settings.auditRetentionMs > 0) {
        const audit = await purgeAudit(db, now - settings.auditRetentionMs)
        removedTotal?.inc({ what: 'audit' }, audit)
        if (audit > 0) log.info({ removed: audit }, 'audit entries older than NOTIFY_AUDIT_RETENTION removed')
      }
      const changes = await pruneStreamChanges(db, now - settings.streamRetentionMs)
      removedTotal?.inc({ what: 'stream_changes' }, changes)
      if (changes > 0)
        log.info({ removed: changes }, 'realtime stream changes older than NOTIFY_STREAM_RETENTION removed')
      const sessions = await sweepSessions(db, now)
      removedTotal?.inc({ what: 'sessions' }, sessions)
      if (sessions > 0) log.info({ removed: sessions }, 'expired sessions removed')
      const tokens = await sweepReaderTokens(db, now - EXPIRED_TOKEN_KEPT_MS)
      removedTotal?.inc({ what: 'reader_tokens' }, tokens)
      if (tokens > 0) log.info({ removed: tokens }, 'reader tokens expired for 30 days removed')
      const attempts = await sweepLoginAttempts(db, now)
      removedTotal?.inc({ what: 'login_attempts' }, attempts)
    },
    {
      intervalMs: settings.intervalMs ?? INTERVAL_MS,
      firstRunMs: settings.intervalMs ?? FIRST_RUN_MS,
      ...(metrics ? { metrics: { app: metrics, job: 'housekeeping' } } : {}),
      onError: (err) => log.warn({ err }, 'housekeeping failed; it runs again in an hour'),
    },
  )
}
