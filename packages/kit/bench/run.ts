/**
 * Kit benchmarks: `npm run bench -w packages/kit` (about a minute).
 * (1) SQLite through the kit (Kysely + NodeSqliteDatabase) vs raw node:sqlite.
 * (2) createHttpApp's JSON route vs a bare node:http handler, loopback, keep-alive.
 * Ratios are time ratios kit/baseline: 1.00 is parity, higher is slower.
 */
import { cpus, totalmem } from 'node:os'
import { benchHttp } from './http.ts'
import { fmt, ratio, table } from './measure.ts'
import { benchSqlite } from './sqlite.ts'

const quick = process.argv.includes('--quick')
const only = process.argv.find((a) => a.startsWith('--only='))?.slice('--only='.length)
const cpu = cpus()
console.log(`machine: ${cpu[0]?.model ?? 'unknown'}, ${cpu.length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB`)
console.log(`node ${process.version}, ${process.platform} ${process.arch}`)
console.log('')

if (only === undefined || only === 'sqlite') {
  console.log('SQLite: kit (Kysely over NodeSqliteDatabase) vs raw node:sqlite prepared statements')
  const sqliteRows = [['case', 'raw ops/s', 'kit ops/s', 'kit/raw time', 'prepared ops/s', 'prepared/raw time']]
  for (const r of await benchSqlite(quick ? 2000 : 20_000, quick ? 2 : 5)) {
    sqliteRows.push([
      r.label,
      fmt(r.raw.opsPerSec),
      fmt(r.kit.opsPerSec),
      ratio(r.kit, r.raw),
      r.prepared ? fmt(r.prepared.opsPerSec) : '-',
      r.prepared ? ratio(r.prepared, r.raw) : '-',
    ])
  }
  console.log(table(sqliteRows))
  console.log('')
}

if (only === undefined || only === 'http') {
  const load = quick
    ? { connections: 50, warmupMs: 300, durationMs: 1000 }
    : { connections: 50, warmupMs: 1000, durationMs: 5000 }
  console.log(
    `HTTP: GET returning JSON, ${load.connections} keep-alive connections, ${load.durationMs / 1000} s after ${load.warmupMs / 1000} s warm-up, load generator in a child process`,
  )
  const h = await benchHttp(load)
  const httpRows = [['server', 'req/s', 'errors', 'kit/bare time']]
  for (const f of [h.baseline, h.off, h.on])
    httpRows.push([f.name, fmt(f.opsPerSec), String(f.errors), ratio(f, h.baseline)])
  console.log(table(httpRows))
}
