/**
 * Hook ingestion throughput: POST /hooks/{token} with an Alertmanager-style body, on
 * SQLite and on PostgreSQL, against kit's bare JSON route as the baseline.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { type Postgres, tempDir } from '@gatehouse/testkit'
import { type FloorFigures, ingestFloor } from './ingest-floor.ts'
import { type LoadResult, load, percentile } from './load.ts'
import { type Running, startBaseline, startNotifyProcess } from './servers.ts'

const TOKEN = 'bench-token-0123456789abcdef'
const BODY = readFileSync(join(import.meta.dirname, '..', 'test', 'fixtures', 'alertmanager-slack.json'), 'utf8')

export interface IngestFigures {
  name: string
  result: LoadResult
  /** Server process CPU time per successful request, in µs. */
  cpuPerRequestUs: number
  /** The database's own rate for the same rows (ingest-floor.ts), when measured. */
  floor?: FloorFigures
}

async function measure(name: string, server: Running, connections: number, durationMs: number): Promise<IngestFigures> {
  const options = {
    url: `${server.base}/hooks/${TOKEN}`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: BODY,
    connections,
  }
  await load({ ...options, durationMs: 1500 }) // warm-up
  const cpuBefore = server.cpuSeconds()
  const result = await load({ ...options, durationMs })
  const cpuPerRequestUs = ((server.cpuSeconds() - cpuBefore) / result.requests) * 1e6
  if (result.errors > 0) throw new Error(`${name}: ${result.errors} failed requests`)
  return { name, result, cpuPerRequestUs }
}

export async function benchIngest(pg: Postgres, durationMs: number, connections: number): Promise<IngestFigures[]> {
  const out: IngestFigures[] = []
  const baseline = await startBaseline()
  try {
    out.push(await measure('baseline: kit bare JSON route', baseline, connections, durationMs))
  } finally {
    await baseline.stop()
  }
  const dir = tempDir('notify-bench-')
  const targets: Array<[string, string]> = [
    ['notify on SQLite', `sqlite:${join(dir.path, 'ingest.db')}`],
    ['notify on PostgreSQL', await pg.createDatabase()],
  ]
  for (const [name, url] of targets) {
    const server = await startNotifyProcess({ NOTIFY_DATABASE_URL: url, NOTIFY_HOOK_TOKEN: TOKEN })
    let figures: IngestFigures
    try {
      figures = await measure(name, server, connections, durationMs)
    } finally {
      await server.stop()
    }
    // The floor runs on the same database once notify has stopped (nothing else writing).
    out.push({ ...figures, floor: await ingestFloor(url, connections, durationMs) })
  }
  dir.remove()
  return out
}

export function printIngest(figures: IngestFigures[]): string[] {
  const base = figures[0]!.result.rps
  const lines = figures.flatMap(({ name, result, cpuPerRequestUs, floor }) => {
    const p50 = percentile(result.latencies, 50).toFixed(2)
    const p99 = percentile(result.latencies, 99).toFixed(2)
    const line = `${name.padEnd(32)} ${result.rps.toFixed(0).padStart(7)} req/s  (${(result.rps / base).toFixed(2)}x baseline)  p50 ${p50} ms  p99 ${p99} ms  server CPU ${cpuPerRequestUs.toFixed(0)} µs/req  n=${result.requests}`
    if (!floor) return [line]
    return [
      line,
      `  floor: bare INSERT, ${floor.batch} rows/txn ${floor.rowsPerSecond.toFixed(0).padStart(7)} rows/s  notify/floor ${(result.rps / floor.rowsPerSecond).toFixed(2)}`,
    ]
  })
  const sqlite = figures.find((f) => f.name.includes('SQLite'))
  const pg = figures.find((f) => f.name.includes('PostgreSQL'))
  if (sqlite && pg) lines.push(`PostgreSQL / SQLite ingestion: ${(pg.result.rps / sqlite.result.rps).toFixed(2)}`)
  return lines
}
