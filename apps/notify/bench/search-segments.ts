/**
 * `npm run bench:segments -w apps/notify`: what the shape of SQLite's trigram index (how many
 * segments, of what sizes) costs a search. One set of notifications (the search bench's
 * million generated rows) is indexed three ways into three copies of one database:
 *
 * - idle: as the server's indexer leaves it once nothing is left to index (batches of 1,000,
 *   each followed by merge steps at a level of eight; then a level of four: inbox/indexer.ts);
 * - busy: the same batches merged at a level of eight only, as the indexer leaves it while
 *   rows keep coming (and always did, from migration 0012 until the idle level);
 * - FTS5 automerge: batches of 2,000 with FTS5 merging a level of four in the commit of a
 *   batch (notify before migration 0012).
 *
 * A notify server runs on each copy, and each query (the same pseudo-random sequence every
 * run) is sent to all three in turn, alternating the order, so the host's drift falls on all
 * three alike. Rows: NOTIFY_BENCH_SEGMENT_ROWS (default 1,000,000); queries per shape:
 * NOTIFY_BENCH_SEGMENT_QUERIES (default 200).
 */
import { copyFileSync } from 'node:fs'
import { join } from 'node:path'
import { sql } from '@gatehouse/kit'
import { tempDir } from '@gatehouse/testkit'
import { openNotifyDatabase } from '../src/db/open.ts'
import { BUSY_MERGE_LEVEL, INDEX_BATCH, indexPending, searchMerger, searchSegments } from '../src/inbox/indexer.ts'
import { percentile } from './load.ts'
import { build, timeGet, WORDS } from './search.ts'
import { type Running, startNotifyProcess } from './servers.ts'

const ROWS = Number(process.env.NOTIFY_BENCH_SEGMENT_ROWS ?? 1_000_000)
const PER_SHAPE = Number(process.env.NOTIFY_BENCH_SEGMENT_QUERIES ?? 200)
const WARM_UP = 5

type Variant = 'idle' | 'busy' | 'FTS5 automerge'
const VARIANTS: Variant[] = ['idle', 'busy', 'FTS5 automerge']

/** Index a copy of the database again, the way `variant` names; the CPU seconds it took. */
async function reindex(file: string, variant: Variant): Promise<number> {
  const database = await openNotifyDatabase(`sqlite:${file}`)
  const db = database.db
  try {
    await sql`insert into notification_fts (notification_fts) values ('delete-all')`.execute(db)
    await sql`update search_index_state set high_water = 0`.execute(db)
    const cpu = process.cpuUsage()
    if (variant === 'busy') {
      const merge = searchMerger(database)
      while ((await indexPending(db, INDEX_BATCH)) > 0) while (await merge(BUSY_MERGE_LEVEL)) {}
    } else {
      await sql`insert into notification_fts (notification_fts, rank) values ('automerge', 4)`.execute(db)
      while ((await indexPending(db, 2000)) > 0) {}
    }
    const used = process.cpuUsage(cpu)
    return (used.user + used.system) / 1e6
  } finally {
    await database.close()
  }
}

async function segmentsOf(file: string): Promise<number> {
  const database = await openNotifyDatabase(`sqlite:${file}`)
  try {
    return await searchSegments(database.db)
  } finally {
    await database.close()
  }
}

/** A fixed pseudo-random sequence (the same queries in every run). */
function generator(seed: number): (n: number) => number {
  let s = seed
  return (n) => {
    s = (s * 1103515245 + 12345) & 0x7fffffff
    return s % n
  }
}

const rnd = generator(12345)
const word = () => WORDS[rnd(WORDS.length)]!
const SHAPES: Array<[string, () => string]> = [
  ['rare term (one host)', () => `q=web-${rnd(1000)}%20`],
  ['unique id', () => `q=${encodeURIComponent(`alert id ${1 + rnd(ROWS)}`)}`],
  ['common word', () => `q=${word()}`],
  ['two words', () => `q=${word()}%20${word()}`],
  ['word + channel + severity', () => `q=${word()}&channel=ch-${rnd(20)}&severity=error`],
  ['no match', () => `q=zz${rnd(1e6)}qq`],
]

const dir = tempDir('notify-segments-')
const servers = new Map<Variant, Running>()
try {
  const files = new Map(VARIANTS.map((v, i) => [v, join(dir.path, `index-${i}.db`)]))
  const first = files.get('idle')!
  process.stdout.write(`search over ${ROWS.toLocaleString('en')} notifications on SQLite, by the index's shape\n`)
  const started = process.cpuUsage()
  await build(`sqlite:${first}`, 'sqlite', ROWS, 3_600_000, INDEX_BATCH)
  const builtCpu = process.cpuUsage(started)
  process.stdout.write(
    `  built and indexed in ${((builtCpu.user + builtCpu.system) / 1e6).toFixed(1)} CPU-s (rows and index)\n`,
  )
  for (const v of VARIANTS) {
    const file = files.get(v)!
    if (v !== 'idle') {
      copyFileSync(first, file)
      const cpu = await reindex(file, v)
      process.stdout.write(`  ${v}: indexed again in ${cpu.toFixed(1)} CPU-s\n`)
    }
    process.stdout.write(`  ${v}: ${await segmentsOf(file)} segments\n`)
  }
  for (const v of VARIANTS)
    servers.set(
      v,
      await startNotifyProcess({ NOTIFY_DATABASE_URL: `sqlite:${files.get(v)}`, NOTIFY_LOG_LEVEL: 'warn' }),
    )
  process.stdout.write(`  per shape, ${PER_SHAPE} queries each to every index (p50 / p95 / mean):\n`)
  for (const [shape, query] of SHAPES) {
    const times = new Map(VARIANTS.map((v) => [v, [] as number[]]))
    for (let i = 0; i < WARM_UP + PER_SHAPE; i++) {
      const q = query()
      for (const v of i % 2 === 0 ? VARIANTS : [...VARIANTS].reverse()) {
        const ms = await timeGet(`${servers.get(v)!.base}/api/v1/notifications?${q}`)
        if (i >= WARM_UP) times.get(v)!.push(ms)
      }
    }
    const figures = VARIANTS.map((v) => {
      const t = times.get(v)!
      const mean = t.reduce((a, b) => a + b, 0) / t.length
      return `${v} ${percentile(t, 50).toFixed(1)} / ${percentile(t, 95).toFixed(1)} / ${mean.toFixed(1)} ms`
    })
    process.stdout.write(`    ${shape.padEnd(26)} ${figures.join(' | ')}\n`)
  }
} finally {
  for (const s of servers.values()) await s.stop()
  dir.remove()
}
