/**
 * `node bench/stream.ts` (from apps/notify): realtime fan-out, on SQLite (or PostgreSQL with
 * NOTIFY_BENCH_BACKEND=postgres, a testkit server with fsync off).
 *   0. Ingest with no reader connected: closed loop (C keep-alive connections, S seconds,
 *      the raw-socket generator of load.ts), then the fixed-rate deliveries of phase 1
 *      (H hooks/s for S seconds: achieved rate, hook latency).
 *   1. Latency: R connected readers (Server-Sent Events), H hooks/s for S seconds. For every
 *      (reader, notification) pair: from the hook's 200 arriving at the sender ("accept", the
 *      issue's measure) and from the hook being sent, to the reader thread reading the bytes
 *      that hold the event (p50/p99/max over all R x H x S deliveries, exact to 0.1 ms). The
 *      phase lasts until every reader has every event; a missing or repeated event fails the run.
 *   2. Ingest ratio: the closed loop of phase 0 again with the R readers connected (every
 *      reader must still receive every hook), against phase 0's rate.
 * Environment: NOTIFY_BENCH_READERS (default 1000), NOTIFY_BENCH_RATE (1000),
 * NOTIFY_BENCH_SECONDS (5), NOTIFY_BENCH_CONNECTIONS (16), NOTIFY_BENCH_READER_THREADS (2),
 * NOTIFY_BENCH_BACKEND (sqlite), NOTIFY_BENCH_PROFILE (a directory: notify's CPU profile).
 *
 * Everything runs on this host's cores: notify in its own process (bench/servers.ts), the
 * readers in worker threads (bench/stream-readers.ts: raw sockets, each event's seq parsed),
 * the senders on this thread. So each figure includes the readers' and senders' competition
 * for the CPU; the bench prints the CPU time each of them used in phase 1 (notify from /proc,
 * the threads from threadCpuUsage), per hook and per delivery, which depends much less on
 * what else runs on a shared machine than the wall-clock figures.
 */
import http from 'node:http'
import os from 'node:os'
import { join } from 'node:path'
import { Worker } from 'node:worker_threads'
import { type Postgres, startPostgres, tempDir } from '@gatehouse/testkit'
import { load } from './load.ts'
import { type Running, startNotifyProcess } from './servers.ts'

const READERS = Number(process.env.NOTIFY_BENCH_READERS ?? 1000)
const RATE = Number(process.env.NOTIFY_BENCH_RATE ?? 1000)
const SECONDS = Number(process.env.NOTIFY_BENCH_SECONDS ?? 5)
const CONNECTIONS = Number(process.env.NOTIFY_BENCH_CONNECTIONS ?? 16)
const TOKEN = 'bench-token-0123456789abcdef'

const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS })

function post(base: string, path: string, body: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders }>((resolve, reject) => {
    const req = http.request(
      `${base}${path}`,
      { method: 'POST', agent, headers: { 'content-type': 'application/json', ...headers } },
      (res) => {
        res.resume()
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }))
      },
    )
    req.on('error', reject)
    req.end(body)
  })
}

const READER_THREADS = Number(process.env.NOTIFY_BENCH_READER_THREADS ?? 2)
/** Latency histograms: 0.1 ms buckets up to 20 s (the last bucket holds anything later). */
const BUCKET_MS = 0.1
const BUCKETS = 200_000

function merge(histograms: Uint32Array[]): Uint32Array {
  const sum = new Uint32Array(BUCKETS)
  for (const h of histograms) for (let i = 0; i < BUCKETS; i++) sum[i]! += h[i]!
  return sum
}

/** The q-quantile of a histogram (the upper edge of its bucket), in ms. */
function quantile(histogram: Uint32Array, q: number): string {
  let n = 0
  for (const c of histogram) n += c
  const rank = Math.max(1, Math.ceil(q * n))
  let seen = 0
  for (let i = 0; i < BUCKETS; i++) {
    seen += histogram[i]!
    if (seen >= rank)
      return i === BUCKETS - 1 ? `>${(BUCKETS * BUCKET_MS).toFixed(0)}` : ((i + 1) * BUCKET_MS).toFixed(1)
  }
  return 'n/a'
}

function threadCpu(): number {
  const u = process.threadCpuUsage()
  return (u.user + u.system) / 1e6
}

function pct(cpu: number, wall: number): string {
  return `${((cpu / wall) * 100).toFixed(0)} %`
}

/**
 * Closed-loop hook throughput (hooks/s) with the raw-socket generator of the ingest bench
 * (load.ts): one fixed body, whose seq is past the fixed-rate phase's, so readers count it
 * without timing it.
 */
async function closedLoop(base: string, seconds: number, seq: number): Promise<{ requests: number; seconds: number }> {
  const result = await load({
    url: `${base}/hooks/${TOKEN}`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ text: `seq:${seq}` }),
    connections: CONNECTIONS,
    durationMs: seconds * 1000,
  })
  if (result.errors > 0) throw new Error(`closed loop: ${result.errors} failed hooks`)
  return result
}

/**
 * Hooks at RATE per second for SECONDS (sent in 10 ms slices, node:http keep-alive agent),
 * titled `seq:<first + s>`; notes when each was sent and when its 200 arrived.
 */
async function fixedRate(base: string, first: number, sent: Float64Array, accepted: Float64Array): Promise<number> {
  const total = sent.length
  let seq = 0
  const t0 = performance.now()
  const sends: Promise<void>[] = []
  while (seq < total) {
    const due = Math.min(total, Math.floor(((performance.now() - t0) / 1000) * RATE))
    while (seq < due) {
      const s = seq++
      sent[s] = performance.timeOrigin + performance.now()
      sends.push(
        post(base, `/hooks/${TOKEN}`, JSON.stringify({ text: `seq:${first + s}` })).then((r) => {
          if (r.status !== 200) throw new Error(`hook ${r.status}`)
          accepted[s] = performance.timeOrigin + performance.now()
        }),
      )
    }
    await new Promise((r) => setTimeout(r, 10))
  }
  await Promise.all(sends)
  return total / ((performance.now() - t0) / 1000)
}

/** Hook latency (sent -> 200 at the sender), p50 and p99 in ms. */
function hookLatency(sent: Float64Array, accepted: Float64Array): string {
  const h = new Uint32Array(BUCKETS)
  for (let s = 0; s < sent.length; s++)
    h[Math.min(BUCKETS - 1, Math.floor(Math.max(0, accepted[s]! - sent[s]!) / BUCKET_MS))]!++
  return `hook sent -> 200 p50 ${quantile(h, 0.5)} ms, p99 ${quantile(h, 0.99)} ms`
}

const BACKEND = process.env.NOTIFY_BENCH_BACKEND ?? 'sqlite'
const dir = tempDir('notify-bench-stream-')
let server: Running | undefined
let pg: Postgres | undefined
try {
  console.log(
    `machine: ${os.cpus().length} x ${os.cpus()[0]?.model}, load ${os
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`,
  )
  if (BACKEND === 'postgres') pg = await startPostgres()
  else if (BACKEND !== 'sqlite') throw new Error(`NOTIFY_BENCH_BACKEND: sqlite or postgres, not ${BACKEND}`)
  console.log(`database: ${BACKEND}`)
  server = await startNotifyProcess({
    NOTIFY_DATABASE_URL: pg ? await pg.createDatabase() : `sqlite:${join(dir.path, 'bench.db')}`,
    NOTIFY_HOOK_TOKEN: TOKEN,
    NOTIFY_LOG_LEVEL: 'warn',
    // NOTIFY_BENCH_PROFILE=DIR: notify writes a V8 CPU profile there when it stops.
    ...(process.env.NOTIFY_BENCH_PROFILE
      ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${process.env.NOTIFY_BENCH_PROFILE}` }
      : {}),
  })
  const base = server.base
  // Development mode (no reader password): every stream is the local administrator's.

  const cpu0 = server.cpuSeconds()
  const idle = await closedLoop(base, SECONDS, 1_000_000)
  const baseline = idle.requests / idle.seconds
  const cpuBaseline = (server.cpuSeconds() - cpu0) / idle.requests
  console.log(
    `ingest, no readers: ${baseline.toFixed(0)} hooks/s (${CONNECTIONS} connections, ${SECONDS} s); ` +
      `notify CPU ${(cpuBaseline * 1e6).toFixed(0)} µs per hook`,
  )

  const total = RATE * SECONDS
  // The same fixed-rate deliveries with no reader connected (seqs past the measured phase's).
  {
    const sent = new Float64Array(total)
    const accepted = new Float64Array(total)
    const cpu = server.cpuSeconds()
    const achieved = await fixedRate(base, 3_000_000, sent, accepted)
    console.log(
      `${RATE} hooks/s, no readers: sent at ${achieved.toFixed(0)}/s; ${hookLatency(sent, accepted)}; ` +
        `notify CPU ${(((server.cpuSeconds() - cpu) / total) * 1e6).toFixed(0)} µs per hook`,
    )
  }
  const accepted = new Float64Array(total).fill(Number.NaN)
  const sent = new Float64Array(total).fill(Number.NaN)
  const { hostname, port } = new URL(base)
  const workers = Array.from({ length: READER_THREADS }, (_, i) => {
    const readers = Math.floor(READERS / READER_THREADS) + (i < READERS % READER_THREADS ? 1 : 0)
    return new Worker(join(import.meta.dirname, 'stream-readers.ts'), {
      workerData: { host: hostname, port: Number(port), readers, total, bucketMs: BUCKET_MS, buckets: BUCKETS },
    })
  })
  const fromWorker = <T>(worker: Worker, type: string, message?: unknown) =>
    new Promise<T>((resolve, reject) => {
      const on = (m: { type: string }) => {
        if (m.type !== type) return
        worker.off('message', on)
        worker.off('error', reject)
        resolve(m as T)
      }
      worker.on('message', on)
      worker.once('error', reject)
      if (message) worker.postMessage(message)
    })
  await Promise.all(workers.map((w) => fromWorker(w, 'connected')))
  console.log(`${READERS} readers connected (${READER_THREADS} worker threads, raw sockets)`)
  const count = async () => {
    const all = await Promise.all(
      workers.map((w) => fromWorker<{ events: number; cpu: number }>(w, 'count', { type: 'count' })),
    )
    return { events: all.reduce((a, m) => a + m.events, 0), cpu: all.reduce((a, m) => a + m.cpu, 0) }
  }

  // 1. Fixed rate: RATE hooks/s for SECONDS, sent in 10 ms slices.
  const readers0 = await count()
  const notify0 = server.cpuSeconds()
  const main0 = threadCpu()
  const t0 = performance.now()
  const achieved = await fixedRate(base, 0, sent, accepted)
  const expected = total * READERS
  const deadline = performance.now() + 30_000
  let counted = await count()
  while (counted.events - readers0.events < expected && performance.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50))
    counted = await count()
  }
  const wall = (performance.now() - t0) / 1000
  const notifyCpu = server.cpuSeconds() - notify0
  const readersCpu = counted.cpu - readers0.cpu
  const mainCpu = threadCpu() - main0
  const reports = await Promise.all(
    workers.map((w) =>
      fromWorker<{ fromAccept: Uint32Array; fromSend: Uint32Array; missing: number; duplicates: number }>(w, 'report', {
        type: 'report',
        accepted,
        sent,
      }),
    ),
  )
  const fromAccept = merge(reports.map((r) => r.fromAccept))
  const fromSend = merge(reports.map((r) => r.fromSend))
  const missing = reports.reduce((a, r) => a + r.missing, 0)
  const duplicates = reports.reduce((a, r) => a + r.duplicates, 0)
  const delivered = expected - missing
  console.log(
    `fan-out at ${RATE} hooks/s x ${READERS} readers: ${delivered}/${expected} events received, ${duplicates} duplicates ` +
      `(hooks sent at ${achieved.toFixed(0)}/s; ${hookLatency(sent, accepted)})\n` +
      `  hook accept (200 at the sender) -> event read: p50 ${quantile(fromAccept, 0.5)} ms, p99 ${quantile(fromAccept, 0.99)} ms, max ${quantile(fromAccept, 1)} ms\n` +
      `  hook sent -> event read:                        p50 ${quantile(fromSend, 0.5)} ms, p99 ${quantile(fromSend, 0.99)} ms, max ${quantile(fromSend, 1)} ms\n` +
      `  CPU over the phase (${wall.toFixed(1)} s, until the last event): notify ${pct(notifyCpu, wall)} of a core ` +
      `(${((notifyCpu / total) * 1e6).toFixed(0)} µs per hook, ${((notifyCpu / delivered) * 1e9).toFixed(0)} ns per delivery); ` +
      `readers ${pct(readersCpu, wall)} (${((readersCpu / delivered) * 1e9).toFixed(0)} ns per delivery); ` +
      `sender thread ${pct(mainCpu, wall)}`,
  )
  if (missing > 0 || duplicates > 0) process.exitCode = 1

  // 2. Closed-loop ingest with the readers connected.
  const cpu1 = server.cpuSeconds()
  const before = (await count()).events
  const loop = await closedLoop(base, SECONDS, 2_000_000)
  const withReaders = loop.requests / loop.seconds
  const cpuReaders = (server.cpuSeconds() - cpu1) / loop.requests
  // Every reader still receives every hook of the closed loop (none was dropped as too slow).
  const loopExpected = loop.requests * READERS
  let loopEvents = 0
  for (const end = performance.now() + 60_000; performance.now() < end; ) {
    loopEvents = (await count()).events - before
    if (loopEvents >= loopExpected) break
    await new Promise((r) => setTimeout(r, 100))
  }
  console.log(
    `ingest, ${READERS} readers: ${withReaders.toFixed(0)} hooks/s; ratio to no readers ${(withReaders / baseline).toFixed(2)}; ` +
      `notify CPU ${(cpuReaders * 1e6).toFixed(0)} µs per hook (${(cpuReaders / cpuBaseline).toFixed(2)}x the cost with no readers); ` +
      `${loopEvents}/${loopExpected} events received`,
  )
  if (loopEvents !== loopExpected) process.exitCode = 1
  await Promise.all(workers.map((w) => w.terminate()))
} finally {
  await server?.stop()
  await pg?.stop()
  agent.destroy()
  dir.remove()
}
