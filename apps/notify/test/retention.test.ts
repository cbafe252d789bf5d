/**
 * Notification retention (NOTIFY_RETENTION, src/housekeeping.ts) on both databases: closed
 * notifications past it go with their activity events, read and archive marks and search
 * entries; open ones (acknowledged, firing) stay until resolved; activity events stay
 * immutable to everything else; the hourly job runs it. Audit entries past
 * NOTIFY_AUDIT_RETENTION go the same way, and expired reader tokens 30 days on.
 */
import assert from 'node:assert/strict'
import { PassThrough } from 'node:stream'
import { describe, test } from 'node:test'
import { createLogger, loadConfig, sql } from '@gatehouse/kit'
import { waitFor } from '@gatehouse/testkit'
import { finishConfig, schema } from '../src/config.ts'
import { purgeAudit, purgeNotifications } from '../src/housekeeping.ts'
import { indexAll } from '../src/inbox/indexer.ts'
import { createReaderToken } from '../src/tokens/credentials.ts'
import {
  ADMIN,
  ADMIN_PASSWORD,
  backends,
  channel,
  member,
  type Notify,
  publish,
  reader,
  startNotify,
} from './helpers.ts'

const DAY_MS = 86_400_000

/** Move notifications' creation back by `days`. */
async function age(n: Notify, ids: number[], days: number) {
  await n.database.db
    .updateTable('notifications')
    .set({ created_at: new Date(Date.now() - days * DAY_MS).toISOString() })
    .where('id', 'in', ids)
    .execute()
}

async function ids(
  n: Notify,
  table: 'notifications' | 'notification_events' | 'notification_reads' | 'notification_archives',
) {
  const column = table === 'notifications' ? 'id' : 'notification_id'
  const rows = await n.database.db
    .selectFrom(table)
    .select(sql<number>`${sql.ref(column)}`.as('id'))
    .execute()
  return [...new Set(rows.map((r) => Number(r.id)))].sort((a, b) => a - b)
}

/**
 * What the hourly job saw and did, for a wait on it that timed out: the rows it should remove
 * (with the cutoffs of a run starting now), its counters, what the server logged (a run that
 * failed says why), and on PostgreSQL every other session of the database with what it waits
 * for, and the locks not granted (a run stuck behind a lock waits silently for the 60 s query
 * timeout). A wait that fails under load tells, next time, which of these it was.
 */
async function jobState(n: Notify, logged: string[]): Promise<string> {
  const db = n.database.db
  const now = Date.now()
  const part = async (name: string, read: () => Promise<unknown>) => {
    try {
      return `${name}: ${JSON.stringify(await read())}`
    } catch (err) {
      return `${name}: (unreadable: ${(err as Error).message})`
    }
  }
  const lines = [
    `now ${new Date(now).toISOString()}; a run now removes notifications created before ${new Date(now - 30 * DAY_MS).toISOString()}, reader tokens expired before ${new Date(now - 30 * DAY_MS).toISOString()}, audit entries before ${new Date(now - 365 * DAY_MS).toISOString()}`,
    await part('notifications', () => db.selectFrom('notifications').select(['id', 'state', 'created_at']).execute()),
    await part('notification_purges', () => db.selectFrom('notification_purges').selectAll().execute()),
    await part('reader_tokens', () => db.selectFrom('reader_tokens').select(['id', 'expires_at']).execute()),
    await part('admin_audit older than 300 days', () =>
      db
        .selectFrom('admin_audit')
        .select(['id', 'target', 'created_at'])
        .where('created_at', '<', new Date(now - 300 * DAY_MS).toISOString())
        .execute(),
    ),
    await part('audit_purges', () => db.selectFrom('audit_purges').selectAll().execute()),
    await part('login_attempts', () => db.selectFrom('login_attempts').select(['window_end']).execute()),
    await part('counters', async () =>
      (await n.app.metrics.registry.metrics())
        .split('\n')
        .filter((l) => l.startsWith('notify_housekeeping_removed_total')),
    ),
  ]
  if (n.database.kind === 'postgres') {
    lines.push(
      await part('other sessions', async () => {
        const r = await sql<Record<string, unknown>>`select pid, state, wait_event_type, wait_event,
            round(extract(epoch from now() - xact_start)::numeric, 3) as xact_seconds,
            round(extract(epoch from now() - query_start)::numeric, 3) as query_seconds, left(query, 300) as query
          from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`.execute(db)
        return r.rows
      }),
      await part('locks not granted', async () => {
        const r = await sql<Record<string, unknown>>`select pid, locktype, relation::regclass::text as relation,
            transactionid::text as transaction, mode, pg_blocking_pids(pid) as blocked_by
          from pg_locks where not granted`.execute(db)
        return r.rows
      }),
    )
  }
  lines.push(`server log (warn and housekeeping lines):\n${logged.join('') || '(nothing)'}`)
  return lines.join('\n')
}

/** `waitFor`, with the hourly job's state in the message when it times out. */
async function waitForJob(n: Notify, logged: string[], what: string, check: () => Promise<boolean>) {
  try {
    await waitFor(what, check)
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${await jobState(n, logged)}`, { cause: err })
  }
}

for (const backend of backends) {
  describe(`notification retention (${backend.name})`, () => {
    test('closed notifications past retention go with what hangs on them; open ones stay until resolved', async (t) => {
      const n = await startNotify(backend, { searchIndexIntervalMs: 3_600_000 })
      t.after(() => n.close())
      const admin = await n.client.login(ADMIN, ADMIN_PASSWORD)
      const ops = await channel(n, admin, 'ops')
      const viewer = await reader(n, admin, 'vera')
      const operator = await reader(n, admin, 'otto')
      await member(n, admin, 'ops', 'otto', 'operator')
      const message = await publish(n, ops.token, 'wombat-4471 backup done')
      const open = await publish(n, ops.token, 'wombat-4471 disk failing')
      const done = await publish(n, ops.token, 'wombat-4471 cpu high')
      const recent = await publish(n, ops.token, 'wombat-4471 fresh')
      const post = (path: string, cookie: string) => n.client.post(path, { cookie })
      assert.equal((await post(`/api/v1/notifications/${open}/acknowledge`, operator)).status, 200)
      assert.equal((await post(`/api/v1/notifications/${done}/acknowledge`, operator)).status, 200)
      assert.equal((await post(`/api/v1/notifications/${done}/resolve`, operator)).status, 200)
      assert.equal((await post(`/api/v1/notifications/${message}/read`, viewer)).status, 200)
      assert.equal((await post(`/api/v1/notifications/${message}/archive`, viewer)).status, 200)
      if (backend.name === 'sqlite') await indexAll(n.database)
      await age(n, [message, open, done], 100)
      const search = async () =>
        (await n.client.get(`/api/v1/notifications?q=wombat-4471&limit=50`, { cookie: admin })).body.notifications
          .map((x: { id: number }) => x.id)
          .sort((a: number, b: number) => a - b)
      assert.deepEqual(await search(), [message, open, done, recent])

      assert.equal(await purgeNotifications(n.database.db, n.database.kind, Date.now() - 30 * DAY_MS, 1), 2)
      assert.deepEqual(await ids(n, 'notifications'), [open, recent])
      assert.deepEqual(await ids(n, 'notification_events'), [open], "the resolved one's events went with it")
      assert.deepEqual(await ids(n, 'notification_reads'), [])
      assert.deepEqual(await ids(n, 'notification_archives'), [])
      assert.deepEqual(await search(), [open, recent])
      if (backend.name === 'sqlite') {
        // The trigram index holds exactly the rows left (FTS5 compares it with the table).
        await sql`insert into notification_fts (notification_fts, rank) values ('integrity-check', 1)`.execute(
          n.database.db,
        )
      }
      assert.equal(await purgeNotifications(n.database.db, n.database.kind, Date.now() - 30 * DAY_MS), 0)

      // Activity events are still immutable to anything but the retention.
      await assert.rejects(
        n.database.db.deleteFrom('notification_events').where('notification_id', '=', open).execute(),
        /activity events are immutable/,
      )
      await assert.rejects(
        n.database.db.updateTable('notification_events').set({ username: 'mallory' }).execute(),
        /activity events are immutable/,
      )
      // Once resolved, the old incident goes too.
      assert.equal((await post(`/api/v1/notifications/${open}/resolve`, operator)).status, 200)
      assert.equal(await purgeNotifications(n.database.db, n.database.kind, Date.now() - 30 * DAY_MS), 1)
      assert.deepEqual(await ids(n, 'notifications'), [recent])
      assert.deepEqual(await ids(n, 'notification_events'), [])
      assert.equal(
        (await n.database.db.selectFrom('notification_purges').selectAll().execute()).length,
        0,
        'the purge list is emptied in its transaction',
      )
    })

    test('audit entries past NOTIFY_AUDIT_RETENTION go; nothing else may delete or change one', async (t) => {
      const n = await startNotify(backend)
      t.after(() => n.close())
      const at = (days: number) => new Date(Date.now() - days * DAY_MS).toISOString()
      const entry = (target: string, days: number) => ({
        actor_id: 'x',
        actor: 'admin',
        action: 'user.update',
        target,
        details: '{}',
        created_at: at(days),
      })
      await n.database.db
        .insertInto('admin_audit')
        .values([entry('old-1', 400), entry('old-2', 380), entry('recent', 10)])
        .execute()
      const targets = async () =>
        (await n.database.db.selectFrom('admin_audit').select('target').orderBy('id').execute()).map((r) => r.target)
      // One entry per transaction: the batches follow one another.
      assert.equal(await purgeAudit(n.database.db, Date.now() - 365 * DAY_MS, 1), 2)
      assert.deepEqual(await targets(), ['recent'])
      const changes = () => n.database.sqlite?.prepare('select total_changes() as n').get()?.n
      const before = changes()
      assert.equal(await purgeAudit(n.database.db, Date.now() - 365 * DAY_MS), 0)
      assert.equal(changes(), before, 'nothing due: nothing written (SQLite counts every row a statement changed)')
      assert.deepEqual(await n.database.db.selectFrom('audit_purges').selectAll().execute(), [], 'no cutoff left')
      await assert.rejects(
        n.database.db.deleteFrom('admin_audit').where('target', '=', 'recent').execute(),
        /audit entries are immutable/,
      )
      await assert.rejects(
        n.database.db.updateTable('admin_audit').set({ target: 'forged' }).where('target', '=', 'recent').execute(),
        /audit entries are immutable/,
      )
      assert.deepEqual(await targets(), ['recent'])
      assert.equal(n.config.auditRetention, 365 * DAY_MS, 'a year by default')
      assert.throws(
        () => finishConfig(loadConfig(schema, { env: { NOTIFY_AUDIT_RETENTION: '12h' } }).config),
        /NOTIFY_AUDIT_RETENTION: at least 24h, or 0 to keep the audit log/,
      )
    })

    test('a notification arriving while a purge runs stays, though nothing was recent when the purge began', async (t) => {
      const n = await startNotify(backend)
      t.after(() => n.close())
      const admin = await n.client.login(ADMIN, ADMIN_PASSWORD)
      const ops = await channel(n, admin, 'ops')
      const old = await publish(n, ops.token, 'last quarter')
      await age(n, [old], 100)
      // The purge's first read (where the old range ends: nowhere, nothing is recent) is
      // answered only once a new notification has arrived, as one may between two batches.
      let arrived: number | undefined
      const db = n.database.db
      const slowed = new Proxy(db, {
        get(target, key) {
          if (key === 'getExecutor' && arrived === undefined) {
            const executor = target.getExecutor()
            return () =>
              new Proxy(executor, {
                get(e, k) {
                  if (k !== 'executeQuery') {
                    const v = Reflect.get(e, k, e)
                    return typeof v === 'function' ? v.bind(e) : v
                  }
                  return async (...args: Parameters<typeof executor.executeQuery>) => {
                    const result = await e.executeQuery(...args)
                    arrived ??= await publish(n, ops.token, 'just now')
                    return result
                  }
                },
              })
          }
          const v = Reflect.get(target, key, target)
          return typeof v === 'function' ? v.bind(target) : v
        },
      })
      assert.equal(await purgeNotifications(slowed, n.database.kind, Date.now() - 30 * DAY_MS, 1), 1)
      assert.ok(arrived, 'the new notification arrived during the purge')
      assert.deepEqual(await ids(n, 'notifications'), [arrived])
    })

    test('the hourly job applies NOTIFY_RETENTION and NOTIFY_AUDIT_RETENTION and removes long-expired reader tokens and ended sign-in counts; a retention under a day is refused', async (t) => {
      // The server's log is kept for a failure message: warnings (a run that failed) and the
      // job's own lines (what a run removed, and when).
      const logged: string[] = []
      const sink = new PassThrough().on('data', (line: Buffer) => {
        const text = line.toString()
        if (/"level":"(warn|error|fatal)"|removed/.test(text)) logged.push(text)
      })
      const n = await startNotify(backend, {
        env: { NOTIFY_RETENTION: '720h' },
        housekeepingIntervalMs: 100,
        logger: createLogger({ name: 'notify', level: 'info', destination: sink }),
      })
      t.after(() => n.close())
      const admin = await n.client.login(ADMIN, ADMIN_PASSWORD)
      const ops = await channel(n, admin, 'ops')
      const old = await publish(n, ops.token, 'last quarter')
      const kept = await publish(n, ops.token, 'this month')
      await age(n, [old], 31)
      await age(n, [kept], 29)
      // A reader token that expired 31 days ago goes in the same run (whatever NOTIFY_RETENTION).
      const user = await n.database.db
        .selectFrom('users')
        .select('id')
        .where('username', '=', ADMIN)
        .executeTakeFirstOrThrow()
      const { row: token } = await createReaderToken(n.database.db, user.id, 'old script')
      await n.database.db
        .updateTable('reader_tokens')
        .set({ expires_at: new Date(Date.now() - 31 * DAY_MS).toISOString() })
        .where('id', '=', token.id)
        .execute()
      // And an audit entry past the default NOTIFY_AUDIT_RETENTION (a year).
      await n.database.db
        .insertInto('admin_audit')
        .values({
          actor_id: user.id,
          actor: ADMIN,
          action: 'user.update',
          target: 'long ago',
          details: '{}',
          created_at: new Date(Date.now() - 400 * DAY_MS).toISOString(),
        })
        .execute()
      // The admin's sign-in counted once for the address and once for the name; windows that end go.
      await n.database.db
        .updateTable('login_attempts')
        .set({ window_end: new Date(Date.now() - 1000).toISOString() })
        .execute()
      await waitForJob(
        n,
        logged,
        'the old notification removed',
        async () => (await ids(n, 'notifications')).length === 1,
      )
      assert.deepEqual(await ids(n, 'notifications'), [kept])
      // Counted once the run ends, a moment after its delete is visible.
      await waitForJob(n, logged, 'the removals counted', async () => {
        const metrics = await n.app.metrics.registry.metrics()
        return (
          /^notify_housekeeping_removed_total\{what="notifications"\} 1$/m.test(metrics) &&
          /^notify_housekeeping_removed_total\{what="reader_tokens"\} 1$/m.test(metrics) &&
          /^notify_housekeeping_removed_total\{what="audit"\} 1$/m.test(metrics) &&
          /^notify_housekeeping_removed_total\{what="login_attempts"\} 2$/m.test(metrics) &&
          // The kit's job metrics: when the run last ended well, for an alert when it stops.
          /^notify_job_last_success_timestamp_seconds\{job="housekeeping"\} \d/m.test(metrics) &&
          /^notify_job_failures_total\{job="housekeeping"\} 0$/m.test(metrics)
        )
      })
      assert.equal((await n.database.db.selectFrom('reader_tokens').select('id').execute()).length, 0)
      assert.equal(
        (await n.database.db.selectFrom('admin_audit').select('id').where('target', '=', 'long ago').execute()).length,
        0,
      )
      assert.throws(
        () => finishConfig(loadConfig(schema, { env: { NOTIFY_RETENTION: '12h' } }).config),
        /NOTIFY_RETENTION: at least 24h, or 0 to keep notifications/,
      )
    })
  })
}
