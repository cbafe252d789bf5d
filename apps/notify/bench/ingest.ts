/**
 * Hook ingestion throughput: POST /hooks/{token} with an Alertmanager-style body, on
 * SQLite and on PostgreSQL, against kit's bare JSON route as the baseline, and against the
 * database floor (ingest-floor.ts).
 *
 * CPU time is counted for every party: the server process (from /proc), on PostgreSQL the
 * whole database server (postmaster and its children), and the load generator (this
 * process). The load generator runs on the same cores as the server, so the rate ratio
 * also measures the generator; the CPU ratio (floor CPU per row / service CPU per hook,
 * the database's CPU included on both sides) does not.
 *
 * notify's lines also give the mean deliveries per transaction during the run, from its
 * `notify_delivery_group_size` histogram: how well group commit grouped at that concurrency.
 *
 * NOTIFY_BENCH_PROFILE=DIR: notify writes a V8 CPU profile there when it stops.
 */
import { readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { metric, type Postgres, tempDir } from '@gatehouse/testkit'
import { type FloorFigures, ingestFloor } from './ingest-floor.ts'
import { type LoadResult, load, percentile } from './load.ts'
import { type Running, startBaseline, startNotifyProcess } from './servers.ts'

/** Rows per transaction of the floor. */
const FLOOR_BATCH = 32
const TOKEN = 'bench-token-0123456789abcdef'
const BODY = readFileSync(join(import.meta.dirname, '..', 'test', 'fixtures', 'alertmanager-slack.json'), 'utf8')

export interface IngestFigures {
  name: string
  /** Keep-alive connections of the load generator. */
  connections: number
  result: LoadResult
  /** Server process CPU time per successful request, in µs. */
  cpuPerRequestUs: number
  /** PostgreSQL: the database server's CPU time per successful request, in µs. */
  dbCpuPerRequestUs?: number
  /** The load generator's (this process's) CPU time per successful request, in µs. */
  generatorCpuPerRequestUs: number
  /** The database's own rate for the same rows (ingest-floor.ts), when measured. */
  floor?: FloorFigures
  /** notify: deliveries per group-commit transaction during the run, on average (its metric). */
  meanGroup?: number
  /** The rate of each round, in order (benchIngest measures in rounds). */
  rounds?: number[]
}

/** notify's group-size histogram (sum, count) from its /metrics; undefined for the baseline. */
async function groupSizes(base: string): Promise<{ sum: number; count: number } | undefined> {
  const text = await (await fetch(`${base}/metrics`)).text()
  const sum = metric(text, 'notify_delivery_group_size_sum')
  const count = metric(text, 'notify_delivery_group_size_count')
  return sum === undefined || count === undefined ? undefined : { sum, count }
}

const ownCpuSeconds = () => {
  const c = process.cpuUsage()
  return (c.user + c.system) / 1e6
}

async function measure(
  name: string,
  server: Running,
  connections: number,
  durationMs: number,
  warmUpMs: number,
  dbCpuSeconds?: () => number,
): Promise<IngestFigures> {
  const options = {
    url: `${server.base}/hooks/${TOKEN}`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: BODY,
    connections,
  }
  await load({ ...options, durationMs: warmUpMs })
  const groupsBefore = await groupSizes(server.base)
  const cpuBefore = server.cpuSeconds()
  const dbBefore = dbCpuSeconds?.() ?? 0
  const ownBefore = ownCpuSeconds()
  const result = await load({ ...options, durationMs })
  const perRequest = (seconds: number) => (seconds / result.requests) * 1e6
  const generatorCpuPerRequestUs = perRequest(ownCpuSeconds() - ownBefore)
  const cpuPerRequestUs = perRequest(server.cpuSeconds() - cpuBefore)
  const figures: IngestFigures = { name, connections, result, cpuPerRequestUs, generatorCpuPerRequestUs }
  if (dbCpuSeconds) figures.dbCpuPerRequestUs = perRequest(dbCpuSeconds() - dbBefore)
  const groupsAfter = groupsBefore && (await groupSizes(server.base))
  if (groupsBefore && groupsAfter && groupsAfter.count > groupsBefore.count)
    figures.meanGroup = (groupsAfter.sum - groupsBefore.sum) / (groupsAfter.count - groupsBefore.count)
  if (result.errors > 0) throw new Error(`${name}: ${result.errors} failed requests`)
  return figures
}

/** One target's measurements at one level, over every round, as one (CPU and groups weighted by requests). */
function combine(runs: IngestFigures[]): IngestFigures {
  const requests = runs.reduce((n, f) => n + f.result.requests, 0)
  const seconds = runs.reduce((n, f) => n + f.result.seconds, 0)
  const weighted = (pick: (f: IngestFigures) => number | undefined) =>
    runs.some((f) => pick(f) === undefined)
      ? undefined
      : runs.reduce((n, f) => n + pick(f)! * f.result.requests, 0) / requests
  const first = runs[0]!
  const out: IngestFigures = {
    name: first.name,
    connections: first.connections,
    result: {
      requests,
      errors: runs.reduce((n, f) => n + f.result.errors, 0),
      seconds,
      rps: requests / seconds,
      latencies: runs.flatMap((f) => f.result.latencies),
    },
    cpuPerRequestUs: weighted((f) => f.cpuPerRequestUs)!,
    generatorCpuPerRequestUs: weighted((f) => f.generatorCpuPerRequestUs)!,
    rounds: runs.map((f) => f.result.rps),
  }
  const db = weighted((f) => f.dbCpuPerRequestUs)
  if (db !== undefined) out.dbCpuPerRequestUs = db
  // Transactions are requests / mean group in each run.
  if (runs.every((f) => f.meanGroup !== undefined))
    out.meanGroup = requests / runs.reduce((n, f) => n + f.result.requests / f.meanGroup!, 0)
  return out
}

interface Target {
  name: string
  server: Running
  url?: string
  dbCpu?: () => number
}

/**
 * Every target at each number of connections (a closed loop: each connection sends its next
 * hook when the last one is answered), in rounds: all targets run at once, and each round
 * measures every level on each of them in turn, for `durationMs / rounds` each. On a shared
 * or virtual machine the pace changes from minute to minute (the same code measured 2,300 and
 * 4,300 hooks/s a few minutes apart on PostgreSQL); measured back to back, the targets of one
 * round see the same machine, so their ratio is steadier than that of runs minutes apart. The
 * floor runs once per target, after the last round.
 */
export async function benchIngest(
  pg: Postgres,
  durationMs: number,
  levels: readonly number[],
  backends: ReadonlyArray<'sqlite' | 'postgres'> = ['sqlite', 'postgres'],
  rounds = 3,
): Promise<IngestFigures[]> {
  const dir = tempDir('notify-bench-')
  const targets: Target[] = []
  const profile = process.env.NOTIFY_BENCH_PROFILE
  const runs = new Map<Target, IngestFigures[][]>()
  try {
    targets.push({ name: 'baseline: kit bare JSON route', server: await startBaseline() })
    const notify: Array<[string, string]> = []
    if (backends.includes('sqlite')) notify.push(['notify on SQLite', `sqlite:${join(dir.path, 'ingest.db')}`])
    if (backends.includes('postgres')) notify.push(['notify on PostgreSQL', await pg.createDatabase()])
    for (const [name, url] of notify) {
      const server = await startNotifyProcess({
        NOTIFY_DATABASE_URL: url,
        NOTIFY_HOOK_TOKEN: TOKEN,
        ...(profile ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${profile}` } : {}),
      })
      targets.push({ name, server, url, ...(url.startsWith('postgres') ? { dbCpu: () => pg.cpuSeconds() } : {}) })
    }
    const perLevel = (): IngestFigures[][] => levels.map(() => [])
    for (const t of targets) runs.set(t, perLevel())
    for (let r = 0; r < rounds; r++)
      for (const [i, c] of levels.entries())
        for (const t of targets) {
          const figures = await measure(t.name, t.server, c, durationMs / rounds, r === 0 ? 1500 : 300, t.dbCpu)
          runs.get(t)![i]!.push(figures)
        }
  } finally {
    for (const t of targets) await t.server.stop()
  }
  const out: IngestFigures[] = []
  for (const t of targets) {
    const figures = runs.get(t)!.map(combine)
    out.push(...figures)
    if (!t.url) continue
    // The floor runs on the same database once notify has stopped (nothing else writing), and
    // is set against the target's best level.
    const best = figures.reduce((a, b) => (b.result.rps > a.result.rps ? b : a))
    best.floor = await ingestFloor(t.url, FLOOR_BATCH, durationMs, t.dbCpu)
    // SQLite's files (a million rows and more after its floor) go before the next floor: the
    // kernel writing their dirty pages back cost PostgreSQL ~20 µs of CPU per row after them.
    if (t.url.startsWith('sqlite:'))
      for (const suffix of ['', '-wal', '-shm']) rmSync(`${t.url.slice(7)}${suffix}`, { force: true })
  }
  dir.remove()
  return out
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

export function printIngest(figures: IngestFigures[]): string[] {
  const base = new Map(figures.filter((f) => f.name.startsWith('baseline')).map((f) => [f.connections, f.result.rps]))
  const us = (x: number) => `${x.toFixed(0)} µs`
  const lines = figures.flatMap((f) => {
    const { name, result, cpuPerRequestUs, dbCpuPerRequestUs, generatorCpuPerRequestUs, floor, meanGroup } = f
    const p50 = percentile(result.latencies, 50).toFixed(2)
    const p99 = percentile(result.latencies, 99).toFixed(2)
    const db = dbCpuPerRequestUs === undefined ? '' : ` + PostgreSQL ${us(dbCpuPerRequestUs)}`
    const line = `${name.padEnd(32)} ${String(f.connections).padStart(4)} conns ${result.rps.toFixed(0).padStart(7)} req/s  (${(result.rps / base.get(f.connections)!).toFixed(2)}x baseline)  p50 ${p50} ms  p99 ${p99} ms  server CPU ${us(cpuPerRequestUs)}${db}/req  load generator ${us(generatorCpuPerRequestUs)}/req${meanGroup === undefined ? '' : `  ${meanGroup.toFixed(1)} per transaction`}  n=${result.requests}`
    if (!floor) return [line]
    const serviceCpu = cpuPerRequestUs + (dbCpuPerRequestUs ?? 0)
    const out = [
      line,
      `  floor: bare INSERT, ${floor.batch} rows/txn ${floor.rowsPerSecond.toFixed(0).padStart(7)} rows/s, CPU ${us(floor.cpuPerRowUs)}/row${dbCpuPerRequestUs === undefined ? '' : ' (bench + PostgreSQL)'}  notify/floor: rate ${(result.rps / floor.rowsPerSecond).toFixed(2)}, CPU ${(floor.cpuPerRowUs / serviceCpu).toFixed(2)}`,
    ]
    if (floor.indexCpuPerRowUs !== undefined) {
      const withIndex = floor.cpuPerRowUs + floor.indexCpuPerRowUs
      out.push(
        `  floor + search indexing (notify's indexer, in its CPU above): ${us(withIndex)}/row  notify/floor CPU ${(withIndex / serviceCpu).toFixed(2)}`,
      )
    }
    return out
  })
  // The rates at each number of connections, then each target's best against the other's:
  // group commit on PostgreSQL needs hooks in flight to fill a batch while the last one is
  // written, so a few connections measure its latency, not what it can take.
  const of = (target: string) => figures.filter((f) => f.name.includes(target))
  const sqlite = of('SQLite')
  const pg = of('PostgreSQL')
  if (sqlite.length > 0 && pg.length === sqlite.length) {
    const each = sqlite.map((s, i) => `${(pg[i]!.result.rps / s.result.rps).toFixed(2)} at ${s.connections}`)
    const best = (list: IngestFigures[]) => Math.max(...list.map((f) => f.result.rps))
    lines.push(
      `PostgreSQL / SQLite ingestion: ${each.join(', ')} connections; best / best ${(best(pg) / best(sqlite)).toFixed(2)}`,
    )
    // Each round's targets ran back to back: its ratio is the one to read on a machine whose pace drifts.
    const count = sqlite[0]!.rounds?.length ?? 0
    if (count > 1) {
      const roundBest = (list: IngestFigures[], r: number) => Math.max(...list.map((f) => f.rounds![r]!))
      const ratios = Array.from({ length: count }, (_, r) => roundBest(pg, r) / roundBest(sqlite, r))
      const perLevel = sqlite.map(
        (s, i) => `at ${s.connections}: ${s.rounds!.map((rps, r) => (pg[i]!.rounds![r]! / rps).toFixed(2)).join(', ')}`,
      )
      lines.push(
        `  round by round: ${perLevel.join('; ')}; best / best ${ratios.map((x) => x.toFixed(2)).join(', ')}, median ${median(ratios).toFixed(2)}`,
      )
    }
  }
  return lines
}
