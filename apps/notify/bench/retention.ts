/**
 * `npm run bench:retention -w apps/notify`: the notification retention (housekeeping.ts
 * `purgeNotifications`) on NOTIFY_BENCH_RETENTION_ROWS (default 100,000) closed notifications
 * past retention, among a tenth as many recent ones, on SQLite (search-indexed first) and on
 * PostgreSQL. The baseline, in the same run on an identical database: the same removal as one
 * transaction of one statement per table. What it measures is the total time and how long the
 * event loop stops (the longest gap between 1 ms timer ticks: on SQLite every request waits
 * that long), two rounds each.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from '@gatehouse/kit'
import { loopStallDuring, startPostgres } from '@gatehouse/testkit'
import { openNotifyDatabase } from '../src/db/open.ts'
import { purgeNotifications } from '../src/housekeeping.ts'
import { indexAll } from '../src/inbox/indexer.ts'

const ROWS = Number(process.env.NOTIFY_BENCH_RETENTION_ROWS ?? 100_000)
const DAY_MS = 86_400_000

async function build(url: string) {
  const database = await openNotifyDatabase(url)
  const db = database.db
  await db
    .insertInto('channels')
    .values({
      name: 'alerts',
      display_name: 'alerts',
      description: '',
      accent_color: '#000000',
      visibility: 'public',
      created_at: new Date().toISOString(),
    })
    .execute()
  const old = new Date(Date.now() - 100 * DAY_MS).toISOString()
  const now = new Date().toISOString()
  const total = ROWS + ROWS / 10
  for (let from = 0; from < total; from += 1000) {
    const rows = Array.from({ length: Math.min(1000, total - from) }, (_, k) => {
      const i = from + k
      return {
        channel: 'alerts',
        kind: 'message' as const,
        title: `disk ${i} on host-${i % 97}`,
        body: `filesystem /var/lib/db-${i % 13} is ${i % 100}% full`,
        severity: 'warning' as const,
        state: i % 2 === 0 ? ('received' as const) : ('resolved' as const),
        content: '{}',
        search_text: `alerts disk ${i} on host-${i % 97} filesystem /var/lib/db-${i % 13} is ${i % 100}% full`,
        created_at: i < ROWS ? old : now,
      }
    })
    await db.insertInto('notifications').values(rows).execute()
  }
  // A reader who marked every tenth notification read (the marks a purge must find).
  await db
    .insertInto('users')
    .values({
      id: 'u1',
      username: 'vera',
      kind: 'human',
      auth_type: 'none',
      oidc_subject: null,
      password_hash: null,
      is_admin: 0,
      enabled: 1,
      created_at: now,
    })
    .execute()
  await sql`insert into notification_reads (user_id, notification_id)
    select 'u1', id from notifications where id % 10 = 0`.execute(db)
  if (database.kind === 'sqlite') await indexAll(database)
  return database
}

async function once(url: string, how: 'one transaction' | 'batches'): Promise<string> {
  const database = await build(url)
  try {
    const cutoff = Date.now() - 30 * DAY_MS
    const { ms, longest, result } = await loopStallDuring(async () => {
      if (how === 'batches') return purgeNotifications(database.db, database.kind, cutoff)
      return database.db.transaction().execute(async (trx) => {
        const old = sql`select id from notifications where created_at < ${new Date(cutoff).toISOString()}
          and state in ('received', 'resolved')`
        if (database.kind === 'sqlite')
          await sql`insert into notification_fts (notification_fts, rowid, search_text)
            select 'delete', id, search_text from notifications where id in (${old})`.execute(trx)
        for (const table of ['notification_reads', 'notification_archives', 'action_contexts'])
          await sql`delete from ${sql.table(table)} where notification_id in (${old})`.execute(trx)
        const r = await sql`delete from notifications where id in (${old})`.execute(trx)
        return Number(r.numAffectedRows ?? 0)
      })
    })
    if (result !== ROWS) throw new Error(`${how} removed ${result} of ${ROWS}`)
    return `${database.kind}, ${how}: ${ms.toFixed(0)} ms; the event loop stopped for at most ${longest.toFixed(1)} ms`
  } finally {
    await database.close()
  }
}

console.log(`machine: ${cpus()[0]?.model ?? 'unknown'}, ${cpus().length} cores; ${ROWS} notifications past retention`)
const dir = mkdtempSync(join(tmpdir(), 'notify-retention-bench-'))
const pg = await startPostgres()
try {
  let file = 0
  for (let round = 1; round <= 2; round++) {
    for (const how of ['one transaction', 'batches'] as const) {
      console.log(`round ${round}, ${await once(`sqlite:${join(dir, `${++file}.db`)}`, how)}`)
      console.log(`round ${round}, ${await once(await pg.createDatabase(), how)}`)
    }
  }
} finally {
  await pg.stop()
  rmSync(dir, { recursive: true, force: true })
}
