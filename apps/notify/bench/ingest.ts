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
  dbCpuSeconds?: () => number,
): Promise<IngestFigures> {
  const options = {
    url: `${server.base}/hooks/${TOKEN}`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: BODY,
    connections,
  }
  await load({ ...options, durationMs: 1500 }) // warm-up
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

/**
 * Every target at each number of connections (a closed loop: each connection sends its next
 * hook when the last one is answered). The floor runs once per target, after the last level.
 */
export async function benchIngest(
  pg: Postgres,
  durationMs: number,
  levels: readonly number[],
  backends: ReadonlyArray<'sqlite' | 'postgres'> = ['sqlite', 'postgres'],
): Promise<IngestFigures[]> {
  const out: IngestFigures[] = []
  const baseline = await startBaseline()
  try {
    for (const c of levels) out.push(await measure('baseline: kit bare JSON route', baseline, c, durationMs))
  } finally {
    await baseline.stop()
  }
  const dir = tempDir('notify-bench-')
  const targets: Array<[string, string]> = []
  if (backends.includes('sqlite')) targets.push(['notify on SQLite', `sqlite:${join(dir.path, 'ingest.db')}`])
  if (backends.includes('postgres')) targets.push(['notify on PostgreSQL', await pg.createDatabase()])
  const profile = process.env.NOTIFY_BENCH_PROFILE
  for (const [name, url] of targets) {
    const dbCpu = url.startsWith('postgres') ? () => pg.cpuSeconds() : undefined
    const server = await startNotifyProcess({
      NOTIFY_DATABASE_URL: url,
      NOTIFY_HOOK_TOKEN: TOKEN,
      ...(profile ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${profile}` } : {}),
    })
    const figures: IngestFigures[] = []
    try {
      for (const c of levels) figures.push(await measure(name, server, c, durationMs, dbCpu))
    } finally {
      await server.stop()
    }
    // The floor runs on the same database once notify has stopped (nothing else writing), and
    // is set against the target's best level.
    const best = figures.reduce((a, b) => (b.result.rps > a.result.rps ? b : a))
    best.floor = await ingestFloor(url, FLOOR_BATCH, durationMs, dbCpu)
    out.push(...figures)
    // SQLite's files (a million rows and more after its floor) go before the next target: the
    // kernel writing their dirty pages back cost PostgreSQL ~20 µs of CPU per row after them.
    if (url.startsWith('sqlite:'))
      for (const suffix of ['', '-wal', '-shm']) rmSync(`${url.slice(7)}${suffix}`, { force: true })
  }
  dir.remove()
  return out
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
  }
  return lines
}
