/**
 * `npm run bench -w apps/notify`: hook ingestion (SQLite, PostgreSQL, kit baseline) and
 * inbox search over a large generated inbox. Loopback only; stops by itself.
 *
 * Environment: NOTIFY_BENCH_ROWS (default 1000000), NOTIFY_BENCH_SECONDS (ingestion run
 * length, default 8), NOTIFY_BENCH_CONNECTIONS (the load generator's
 * connections, a list measured in turn, default 32,128), NOTIFY_BENCH_BUILD_SECONDS
 * (cap on generating the inbox, default 240; the size reached is reported), NOTIFY_BENCH_ONLY
 * (ingest or search), NOTIFY_BENCH_BACKENDS (backends of both parts, default sqlite,postgres),
 * NOTIFY_BENCH_CLIENT (`http` for the earlier node:http load generator; see load.ts),
 * NOTIFY_BENCH_MAIN (another checkout's apps/notify/src/main.ts to measure instead: an A/B;
 * the bench, its floor and the migrations it opens stay this checkout's),
 * NOTIFY_BENCH_PROFILE (a directory: notify writes a V8 CPU profile there when it stops).
 */
import os from 'node:os'
import { startPostgres } from '@gatehouse/testkit'
import { benchIngest, printIngest } from './ingest.ts'
import { benchSearch, printSearch } from './search.ts'

const rows = Number(process.env.NOTIFY_BENCH_ROWS ?? 1_000_000)
const seconds = Number(process.env.NOTIFY_BENCH_SECONDS ?? 8)
const connections = (process.env.NOTIFY_BENCH_CONNECTIONS ?? '32,128').split(',').map(Number)
if (!connections.every((c) => Number.isInteger(c) && c > 0))
  throw new Error(
    `NOTIFY_BENCH_CONNECTIONS: positive integers separated by commas, not ${process.env.NOTIFY_BENCH_CONNECTIONS}`,
  )
const rounds = Number(process.env.NOTIFY_BENCH_ROUNDS ?? 3)
if (!Number.isInteger(rounds) || rounds < 1)
  throw new Error(`NOTIFY_BENCH_ROUNDS: a positive integer, not ${process.env.NOTIFY_BENCH_ROUNDS}`)
const buildSeconds = Number(process.env.NOTIFY_BENCH_BUILD_SECONDS ?? 240)
const only = process.env.NOTIFY_BENCH_ONLY // 'ingest' | 'search' | undefined
const backends = (process.env.NOTIFY_BENCH_BACKENDS ?? 'sqlite,postgres').split(',') as Array<'sqlite' | 'postgres'>

const cpu = os.cpus()[0]?.model ?? 'unknown CPU'
console.log(
  `machine: ${os.cpus().length} x ${cpu}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB RAM, ${os.platform()} ${os.release()}, node ${process.version}`,
)
// The machine may be shared: print the load so figures can be judged.
const loadavg = () =>
  os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')
console.log(`load average at start: ${loadavg()}`)
const pg = await startPostgres()
try {
  if (only !== 'search') {
    console.log(
      `\nhook ingestion: POST /hooks/{token}, Alertmanager body, ${connections.join(', then ')} keep-alive connections, ${seconds} s each in ${rounds} round${rounds === 1 ? '' : 's'} (every target and level in turn)`,
    )
    const client = process.env.NOTIFY_BENCH_CLIENT === 'http' ? 'node:http Agent' : 'raw keep-alive sockets (wrk-like)'
    console.log(`load generator: ${client}, in the bench process`)
    if (process.env.NOTIFY_BENCH_MAIN) console.log(`notify: ${process.env.NOTIFY_BENCH_MAIN}`)
    for (const line of printIngest(await benchIngest(pg, seconds * 1000, connections, backends, rounds)))
      console.log(line)
  }
  if (only !== 'ingest') {
    for (const backend of backends) {
      console.log(`\ninbox search (${backend}): generating ${rows.toLocaleString('en')} notifications`)
      const f = await benchSearch(backend, pg, rows, buildSeconds * 1000, 40)
      for (const line of printSearch(f)) console.log(line)
    }
  }
} finally {
  await pg.stop()
  console.log(`\nload average at end: ${loadavg()}`)
}
