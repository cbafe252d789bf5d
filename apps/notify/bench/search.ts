/**
 * Inbox search latency over a large inbox: notifications are generated with bulk SQL
 * (a recursive CTE in SQLite, generate_series in PostgreSQL), then the inbox query is
 * timed through HTTP against a notify process (development mode, administrator view).
 * SQLite's trigram index is built in batches of NOTIFY_BENCH_INDEX_BATCH rows (default
 * 100,000, quick); INDEX_BATCH builds it as the server's indexer would, merge steps included.
 */
import { join } from 'node:path'
import { sql } from '@gatehouse/kit'
import { type Postgres, tempDir } from '@gatehouse/testkit'
import { openNotifyDatabase } from '../src/db/open.ts'
import { indexAll, searchSegments } from '../src/inbox/indexer.ts'
import { percentile } from './load.ts'
import { startNotifyProcess } from './servers.ts'

export const WORDS = (
  'disk memory cpu latency timeout backup deploy rollback certificate expiry replica lag queue ' +
  'kafka redis postgres nginx haproxy kernel oom restart crashloop probe healthcheck dns tls ' +
  'quota throttle error warning firing resolved ingress egress firewall vpn ldap cron batch ' +
  'invoice payment checkout search index shard node pod volume snapshot mirror upload download ' +
  'sensor battery power fan temperature humidity door camera badge printer scanner router switch'
)
  .split(' ')
  .slice(0, 64)
const PADDED = WORDS.map((w) => w.padEnd(12, ' ')).join('')
const CHANNELS = 20

/** SQL for the i-th word of a notification (word slot k), from the padded vocabulary. */
function wordExpr(i: string, mul: number, add: number): string {
  return `trim(substr('${PADDED}', ((${i} * ${mul} + ${add}) % ${WORDS.length}) * 12 + 1, 12))`
}

function rowSelect(i: string, concat: (parts: string[]) => string): string {
  const text = concat([
    `'host web-'`,
    `(${i} % 1000)`,
    `' '`,
    wordExpr(i, 7, 1),
    `' '`,
    wordExpr(i, 13, 5),
    `' '`,
    wordExpr(i, 31, 11),
    `' alert id '`,
    `${i}`,
  ])
  const channel = concat([`'ch-'`, `(${i} % ${CHANNELS})`])
  return `${channel}, 'compat', ${text}, ${text}, 'bench',
    case ${i} % 10 when 0 then 'critical' when 1 then 'error' when 2 then 'warning' when 3 then 'success' else 'info' end,
    case ${i} % 7 when 0 then 'resolved' when 1 then 'acknowledged' else 'received' end,
    '{}', lower(${text} || ' ' || ${channel}), '2026-11-22T00:00:00.000Z'`
}

const COLUMNS = '(channel, kind, title, body, source, severity, state, content, search_text, created_at)'

export interface SearchFigures {
  backend: string
  rows: number
  buildSeconds: number
  byKind: Array<{ kind: string; p50: number; p95: number; n: number }>
  all: { p50: number; p95: number; n: number }
  healthz: { p50: number; p95: number }
}

export async function build(
  url: string,
  kind: 'sqlite' | 'postgres',
  rows: number,
  deadlineMs: number,
  /** SQLite: rows per indexing batch. */
  indexBatch = Number(process.env.NOTIFY_BENCH_INDEX_BATCH ?? 100_000),
): Promise<number> {
  const database = await openNotifyDatabase(url)
  const db = database.db
  try {
    for (let c = 0; c < CHANNELS; c++) {
      await db
        .insertInto('channels')
        .values({
          name: `ch-${c}`,
          display_name: `Channel ${c}`,
          description: '',
          accent_color: '#4f6bed',
          visibility: c % 5 === 4 ? 'private' : 'public',
          created_at: new Date().toISOString(),
        })
        .execute()
    }
    const batch = 100_000
    const started = Date.now()
    if (kind === 'postgres') await sql`drop index notifications_search`.execute(db)
    let done = 0
    while (done < rows && Date.now() - started < deadlineMs) {
      const from = done + 1
      const to = Math.min(rows, done + batch)
      if (kind === 'sqlite') {
        const concat = (p: string[]) => `(${p.join(' || ')})`
        await sql
          .raw(
            `with recursive seq(i) as (select ${from} union all select i + 1 from seq where i < ${to})
             insert into notifications ${COLUMNS} select ${rowSelect('i', concat)} from seq`,
          )
          .execute(db)
      } else {
        const concat = (p: string[]) => `(${p.map((x) => `(${x})::text`).join(' || ')})`
        await sql
          .raw(
            `insert into notifications ${COLUMNS} select ${rowSelect('i', concat)} from generate_series(${from}, ${to}) as i`,
          )
          .execute(db)
      }
      done = to
      process.stdout.write(`  ${kind}: ${done} rows after ${((Date.now() - started) / 1000).toFixed(1)} s\n`)
    }
    if (kind === 'postgres') {
      await sql`create index notifications_search on notifications using gin (search_text gin_trgm_ops)`.execute(db)
      await sql`analyze notifications`.execute(db)
    } else {
      // What the server's background indexer would do.
      await indexAll(database, indexBatch)
      await sql`analyze`.execute(db)
      process.stdout.write(`  sqlite: the trigram index holds ${await searchSegments(db)} segments\n`)
    }
    return done
  } finally {
    await database.close()
  }
}

function queries(rows: number): Array<{ kind: string; query: () => string }> {
  const rnd = (n: number) => Math.floor(Math.random() * n)
  const word = () => WORDS[rnd(WORDS.length)]!
  return [
    { kind: 'rare term (one host)', query: () => `q=web-${rnd(1000)}%20` },
    { kind: 'unique id', query: () => `q=${encodeURIComponent(`alert id ${1 + rnd(rows)}`)}` },
    { kind: 'common word', query: () => `q=${word()}` },
    { kind: 'two words', query: () => `q=${word()}%20${word()}` },
    { kind: 'word + channel + severity', query: () => `q=${word()}&channel=ch-${rnd(CHANNELS)}&severity=error` },
    { kind: 'no match', query: () => `q=zz${rnd(1e6)}qq` },
    { kind: 'filters only', query: () => `state=acknowledged&severity=critical` },
    { kind: 'latest page, limit 200', query: () => 'limit=200' },
  ]
}

export async function timeGet(url: string): Promise<number> {
  const t = performance.now()
  const res = await fetch(url)
  await res.arrayBuffer()
  if (!res.ok) throw new Error(`${url}: ${res.status}`)
  return performance.now() - t
}

export async function benchSearch(
  backend: 'sqlite' | 'postgres',
  pg: Postgres,
  rows: number,
  buildDeadlineMs: number,
  perKind: number,
): Promise<SearchFigures> {
  const dir = tempDir('notify-search-')
  const url = backend === 'sqlite' ? `sqlite:${join(dir.path, 'search.db')}` : await pg.createDatabase()
  const t0 = Date.now()
  const built = await build(url, backend, rows, buildDeadlineMs)
  const buildSeconds = (Date.now() - t0) / 1000
  const server = await startNotifyProcess({ NOTIFY_DATABASE_URL: url, NOTIFY_LOG_LEVEL: 'warn' })
  try {
    const byKind: SearchFigures['byKind'] = []
    const all: number[] = []
    for (const { kind, query } of queries(built)) {
      for (let i = 0; i < 5; i++) await timeGet(`${server.base}/api/v1/notifications?${query()}`) // warm-up
      const times: number[] = []
      for (let i = 0; i < perKind; i++) times.push(await timeGet(`${server.base}/api/v1/notifications?${query()}`))
      all.push(...times)
      byKind.push({ kind, p50: percentile(times, 50), p95: percentile(times, 95), n: times.length })
    }
    const hz: number[] = []
    for (let i = 0; i < 200; i++) hz.push(await timeGet(`${server.base}/healthz`))
    return {
      backend,
      rows: built,
      buildSeconds,
      byKind,
      all: { p50: percentile(all, 50), p95: percentile(all, 95), n: all.length },
      healthz: { p50: percentile(hz, 50), p95: percentile(hz, 95) },
    }
  } finally {
    await server.stop()
    dir.remove()
  }
}

export function printSearch(f: SearchFigures): string[] {
  const ms = (x: number) => `${x.toFixed(1)} ms`
  return [
    `${f.backend}: ${f.rows.toLocaleString('en')} notifications, built in ${f.buildSeconds.toFixed(0)} s`,
    `  all queries: p50 ${ms(f.all.p50)}  p95 ${ms(f.all.p95)}  (n=${f.all.n}); baseline GET /healthz p50 ${ms(f.healthz.p50)} p95 ${ms(f.healthz.p95)}`,
    ...f.byKind.map(
      (k) => `  ${k.kind.padEnd(28)} p50 ${ms(k.p50).padStart(9)}  p95 ${ms(k.p95).padStart(9)}  (n=${k.n})`,
    ),
  ]
}
