/**
 * `npm run bench:explain -w apps/notify`: PostgreSQL's plans for the inbox search's slowest
 * shape (a word + channel + severity), on the bench's generated inbox. Prints EXPLAIN
 * (ANALYZE, BUFFERS) of each page query the server would run for a few sample queries, with
 * their times (each query run once before, as the server's warm cache would hold it): the
 * plans quoted in docs/performance/notify.md.
 *
 * Environment: NOTIFY_BENCH_ROWS (default 1000000); NOTIFY_EXPLAIN_KEEP=1 keeps PostgreSQL
 * running afterwards and prints its URL (for psql), until Ctrl-C.
 */
import { sql } from '@gatehouse/kit'
import { startPostgres } from '@gatehouse/testkit'
import { openNotifyDatabase } from '../src/db/open.ts'
import { searchPlan, searchTerms } from '../src/inbox/search.ts'
import { type InboxFilter, type PageMode, pageSelect } from '../src/inbox/store.ts'
import { build } from './search.ts'

const rows = Number(process.env.NOTIFY_BENCH_ROWS ?? 1_000_000)
const SAMPLES: Array<{ q: string; channel: string; severity: 'error' }> = [
  // ch-1 and ch-11 hold every "error" row (severity and channel both follow the row number)
  { q: 'disk', channel: 'ch-1', severity: 'error' },
  { q: 'kernel', channel: 'ch-11', severity: 'error' },
  // an even channel never has severity "error": the answer is empty
  { q: 'disk', channel: 'ch-4', severity: 'error' },
  { q: 'timeout', channel: 'ch-8', severity: 'error' },
]

const pg = await startPostgres()
try {
  const url = await pg.createDatabase()
  const t0 = Date.now()
  const built = await build(url, 'postgres', rows, 600_000)
  console.log(
    `postgres: ${built.toLocaleString('en')} notifications, built in ${((Date.now() - t0) / 1000).toFixed(0)} s`,
  )
  const database = await openNotifyDatabase(url)
  try {
    const db = database.db
    for (const s of SAMPLES) {
      const search = await searchPlan('postgres', undefined, searchTerms(s.q), s.channel, true)
      if (!search) throw new Error('no plan')
      const filter: InboxFilter = {
        readerId: 'local',
        channels: undefined,
        channel: s.channel,
        severity: s.severity,
        search,
        limit: 50,
      }
      const modes: PageMode[] = search.materialize ? ['window', 'collect'] : ['plain']
      for (const mode of modes) {
        const compiled = pageSelect(db, filter, mode).compile()
        // Once unmeasured: the first visit of freshly loaded pages also writes their hint bits.
        await database.db.executeQuery(compiled)
        const explain = sql<{ 'QUERY PLAN': string }>`explain (analyze, buffers) ${sql.raw(compiled.sql)}`
        // The page query's parameters, bound by position as the server binds them.
        const text = explain.compile(db).sql
        const result = await database.db.executeQuery<{ 'QUERY PLAN': string }>({
          ...explain.compile(db),
          sql: text,
          parameters: compiled.parameters,
        })
        console.log(`\n== q=${s.q} channel=${s.channel} severity=${s.severity}: ${mode} page query`)
        for (const row of result.rows) console.log(row['QUERY PLAN'])
      }
    }
  } finally {
    await database.close()
  }
  if (process.env.NOTIFY_EXPLAIN_KEEP === '1') {
    console.log(`\nPostgreSQL stays up: psql '${url}' (Ctrl-C to stop)`)
    const alive = setInterval(() => undefined, 60_000) // an open handle, so the process waits
    await new Promise((resolve) => process.once('SIGINT', resolve))
    clearInterval(alive)
  }
} finally {
  await pg.stop()
}
