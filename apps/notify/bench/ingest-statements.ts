/**
 * `npm run bench:statements -w apps/notify`: PostgreSQL's CPU time per row for the insert
 * shapes of hook ingestion, by batch size, on notify's schema (trigram GIN index included):
 * the floor's multi-row VALUES, notify's `unnest` batch under the stream-order lock with
 * NOTIFY and RETURNING (its columns as joined texts, as notify sends them, and as `text[]`
 * arrays, as it did before 619aae9), a plain `unnest`; then one grouped hook lookup and
 * `select 1` (the cost of a round trip). Two statements in flight, as notify's queue allows. Each shape runs
 * twice, interleaved: on a shared machine the CPU per row is the figure to read, not the rate.
 */

import { readFileSync } from 'node:fs'
import { startPostgres } from '@gatehouse/testkit'
import { CompiledQuery } from 'kysely'
import { openNotifyDatabase } from '../src/db/open.ts'
import { NOTIFICATION_COLUMNS as COLUMNS } from '../src/ingest/write-queue.ts'

const pg = await startPostgres()
const url = await pg.createDatabase()
const database = await openNotifyDatabase(url)
await database.db
  .insertInto('channels')
  .values({
    name: 'dev',
    display_name: 'dev',
    description: '',
    accent_color: '#000000',
    visibility: 'public',
    created_at: new Date().toISOString(),
  })
  .execute()
const cpu = () => pg.cpuSeconds()
const own = () => {
  const c = process.cpuUsage()
  return (c.user + c.system) / 1e6
}
const body = readFileSync(new URL('../test/fixtures/alertmanager-slack.json', import.meta.url), 'utf8')
const row: Record<string, string | null> = {
  channel: 'dev',
  webhook_id: null,
  kind: 'compat',
  title: 'x'.repeat(60),
  body: 'alert firing',
  source: 'am',
  username: 'am',
  severity: 'error',
  state: 'received',
  content: body,
  search_text: body.toLowerCase().slice(0, 900),
  created_at: new Date().toISOString(),
}
const one = COLUMNS.map((c) => row[c] ?? null)
async function time(name: string, n: number, batch: number, q: () => CompiledQuery, inflight = 2) {
  const c0 = cpu(),
    o0 = own(),
    t0 = performance.now()
  let done = 0
  const loop = async () => {
    while (done < n) {
      done += batch
      await database.db.executeQuery(q())
    }
  }
  await Promise.all(Array.from({ length: inflight }, loop))
  const secs = (performance.now() - t0) / 1000
  console.log(
    `${name.padEnd(40)} batch ${String(batch).padStart(3)}: ${(done / secs).toFixed(0).padStart(6)} rows/s  PG ${(((cpu() - c0) / done) * 1e6).toFixed(0)} µs/row  client ${(((own() - o0) / done) * 1e6).toFixed(0)} µs/row`,
  )
}
const lock = `(select pg_advisory_xact_lock(1), pg_notify('x', '')) as stream_order`
for (const batch of [32, 8, 4, 32, 8]) {
  const tuples = Array.from(
    { length: batch },
    (_, r) => `(${COLUMNS.map((_, c) => `$${r * COLUMNS.length + c + 1}`).join(', ')})`,
  )
  const params = Array.from({ length: batch }, () => one).flat()
  await time('floor VALUES', 6000, batch, () =>
    CompiledQuery.raw(`insert into notifications (${COLUMNS.join(', ')}) values ${tuples.join(', ')}`, params),
  )
  const arrays = COLUMNS.map((_, i) => `$${i + 1}::text[]`).join(', ')
  const cols = COLUMNS.map((c) => Array(batch).fill(row[c] ?? null))
  // notify's batch since 619aae9: each column one text, values joined by U+0001 (write-queue.ts).
  const joined = COLUMNS.map((c) =>
    Array(batch)
      .fill(`\u0001${row[c] ?? '\u0002'}`)
      .join(''),
  )
  const split = COLUMNS.map((_, i) => `(string_to_array($${i + 1}, chr(1), chr(2)))[2:]`).join(', ')
  await time('joined + lock + notify + returning', 6000, batch, () =>
    CompiledQuery.raw(
      `insert into notifications (${COLUMNS.join(', ')}) select ${COLUMNS.map((c) => `r.${c}`).join(', ')} from ${lock}, unnest(${split}) with ordinality as r(${COLUMNS.join(', ')}, ord) order by r.ord returning id`,
      joined,
    ),
  )
  await time('text[] + lock + notify + returning', 6000, batch, () =>
    CompiledQuery.raw(
      `insert into notifications (${COLUMNS.join(', ')}) select ${COLUMNS.map((c) => `r.${c}`).join(', ')} from ${lock}, unnest(${arrays}) with ordinality as r(${COLUMNS.join(', ')}, ord) order by r.ord returning id`,
      cols,
    ),
  )
  await time('unnest plain', 6000, batch, () =>
    CompiledQuery.raw(`insert into notifications (${COLUMNS.join(', ')}) select * from unnest(${arrays})`, cols),
  )
}
await time('hook lookup (grouped, 1 hash)', 3000, 1, () =>
  CompiledQuery.raw(
    `select id, (select generation from channel_generation where id = 1) from webhooks where token_hash = any($1::text[])`,
    [['abc']],
  ),
)
await time('select 1', 3000, 1, () => CompiledQuery.raw('select 1', []))
await database.close()
await pg.stop()
