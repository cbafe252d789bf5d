/**
 * `npm run bench:index -w apps/notify`: how long SQLite's search indexing holds the serving
 * thread, and what it costs per row, with FTS5 merging its segments in the commit of a
 * batch (its `automerge`, notify's setting until migration 0012, with batches of 2,000) and
 * with the indexer's bounded merge steps (inbox/indexer.ts). Both index the same rows
 * (Alertmanager fixture texts made unique per row, as notify stores them) into a fresh
 * database with notify's schema, twice each, interleaved. Each transaction the indexer runs
 * (a batch, or a merge step) is one stall of the event loop in the server; the longest ones
 * are what a delivery may wait behind.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from '@gatehouse/kit'
import { openNotifyDatabase } from '../src/db/open.ts'
import {
  BUSY_MERGE_LEVEL,
  IDLE_MERGE_LEVEL,
  INDEX_BATCH,
  indexPending,
  searchMerger,
  searchSegments,
} from '../src/inbox/indexer.ts'
import { searchText } from '../src/ingest/draft.ts'

const ROWS = Number(process.env.NOTIFY_BENCH_INDEX_ROWS ?? 200_000)
const OLD_BATCH = 2000

const fixture = JSON.parse(
  readFileSync(join(import.meta.dirname, '..', 'test', 'fixtures', 'alertmanager-slack.json'), 'utf8'),
)
const strings: string[] = []
const walk = (v: unknown): void => {
  if (typeof v === 'string') strings.push(v)
  else if (v !== null && typeof v === 'object') for (const x of Object.values(v)) walk(x)
}
walk(fixture)
const text = (i: number) =>
  searchText(['alerts', ...strings.map((s) => s.replace(/\d+/g, (m) => String((Number(m) * 7 + i) % 100_000)))])

interface Figures {
  cpuPerRowUs: number
  stalls: number[]
  segments: number
  queryMs: number
}

async function run(steps: boolean): Promise<Figures> {
  const dir = mkdtempSync(join(tmpdir(), 'notify-index-bench-'))
  const database = await openNotifyDatabase(`sqlite:${join(dir, 'notify.db')}`)
  try {
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
    const insert = database.prepare(
      db.insertInto('notifications').values({
        channel: 'alerts',
        kind: 'message',
        title: '',
        body: '',
        severity: 'warning',
        state: 'received',
        content: '{}',
        search_text: '',
        created_at: '',
      }),
    )
    const now = new Date().toISOString()
    await database.transactionSync!((tx) => {
      for (let i = 0; i < ROWS; i++)
        tx.run(insert, 'alerts', 'message', 'title', 'body', 'warning', 'received', '{}', text(i), now)
    })
    if (!steps) await sql`insert into notification_fts (notification_fts, rank) values ('automerge', 4)`.execute(db)
    const merge = searchMerger(database)
    const stalls: number[] = []
    const timed = async <T>(fn: () => Promise<T>): Promise<T> => {
      const started = performance.now()
      const result = await fn()
      stalls.push(performance.now() - started)
      return result
    }
    const cpu = process.cpuUsage()
    for (;;) {
      const n = await timed(() => indexPending(db, steps ? INDEX_BATCH : OLD_BATCH))
      // As the server's indexer: passes that index merge a level of eight, the first that
      // finds nothing (idle) a level of four.
      const level = n > 0 ? BUSY_MERGE_LEVEL : IDLE_MERGE_LEVEL
      if (steps) while (await timed(() => merge(level))) {}
      if (n === 0) break
    }
    const used = process.cpuUsage(cpu)
    const segments = await searchSegments(db)
    const started = performance.now()
    for (let i = 0; i < 20; i++)
      await sql`select count(*) from notification_fts where notification_fts match ${'"ost" AND "-12"'}`.execute(db)
    return {
      cpuPerRowUs: (used.user + used.system) / ROWS,
      stalls,
      segments,
      queryMs: (performance.now() - started) / 20,
    }
  } finally {
    await database.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
console.log(`search indexing of ${ROWS} notifications on SQLite (${INDEX_BATCH} rows a batch with merge steps)`)
for (let round = 1; round <= 2; round++) {
  for (const steps of [false, true]) {
    const f = await run(steps)
    const sorted = [...f.stalls].sort((a, b) => a - b)
    const label = steps ? 'merge steps (now)      ' : 'FTS5 automerge (before)'
    console.log(
      `  ${label}  ${f.cpuPerRowUs.toFixed(1)} µs CPU per row; ${f.stalls.length} transactions, p50 ${quantile(sorted, 0.5).toFixed(1)} ms, p99 ${quantile(sorted, 0.99).toFixed(1)} ms, longest ${sorted.at(-1)!.toFixed(1)} ms; ${f.segments} segments left; a two-trigram query ${f.queryMs.toFixed(2)} ms`,
    )
  }
}
