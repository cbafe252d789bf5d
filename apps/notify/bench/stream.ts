/**
 * `node bench/stream.ts` (from apps/notify): realtime fan-out on SQLite.
 *   1. Latency: R connected readers (SSE), hooks posted at H per second for S seconds;
 *      per (reader, notification): time from the hook's 200 arriving at the sender to the
 *      event arriving at the reader (p50/p99/max).
 *   2. Ingest ratio: closed-loop hook throughput (C keep-alive connections, S seconds, the
 *      raw-socket generator of load.ts) with the R readers connected, against the same run
 *      with no reader connected.
 * Environment: NOTIFY_BENCH_READERS (default 1000), NOTIFY_BENCH_RATE (1000),
 * NOTIFY_BENCH_SECONDS (5), NOTIFY_BENCH_CONNECTIONS (16).
 * notify runs in its own process (bench/servers.ts), the readers in a worker thread
 * (bench/stream-readers.ts) and the senders on this thread. Besides throughput, the ingest
 * comparison reports notify's own CPU time per hook (from /proc), which the other processes
 * on a shared machine do not distort.
 */
import http from 'node:http'
import os from 'node:os'
import { join } from 'node:path'
import { Worker } from 'node:worker_threads'
import { tempDir } from '@gatehouse/testkit'
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

function quantile(sorted: ArrayLike<number>, q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN
}

/**
 * Closed-loop hook throughput (hooks/s) with the raw-socket generator of the ingest bench
 * (load.ts): one fixed body, whose seq is past the fixed-rate phase's, so readers count it
 * without timing it.
 */
async function closedLoop(base: string, seconds: number, seq: number): Promise<number> {
  const result = await load({
    url: `${base}/hooks/${TOKEN}`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ text: `seq:${seq}` }),
    connections: CONNECTIONS,
    durationMs: seconds * 1000,
  })
  if (result.errors > 0) throw new Error(`closed loop: ${result.errors} failed hooks`)
  return result.requests / result.seconds
}

const dir = tempDir('notify-bench-stream-')
let server: Running | undefined
try {
  console.log(
    `machine: ${os.cpus().length} x ${os.cpus()[0]?.model}, load ${os
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`,
  )
  server = await startNotifyProcess({
    NOTIFY_DATABASE_URL: `sqlite:${join(dir.path, 'bench.db')}`,
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
  const baseline = await closedLoop(base, SECONDS, 1_000_000)
  const cpuBaseline = (server.cpuSeconds() - cpu0) / (baseline * SECONDS)
  console.log(
    `ingest, no readers: ${baseline.toFixed(0)} hooks/s (${CONNECTIONS} connections, ${SECONDS} s); ` +
      `notify CPU ${(cpuBaseline * 1e6).toFixed(0)} µs per hook`,
  )

  const total = RATE * SECONDS
  const accepted = new Float64Array(total).fill(Number.NaN)
  const worker = new Worker(join(import.meta.dirname, 'stream-readers.ts'), {
    workerData: { base, readers: READERS, total },
  })
  const fromWorker = (type: string) =>
    new Promise<{ events?: number; latencies?: Float64Array }>((resolve, reject) => {
      const on = (m: { type: string; events?: number; latencies?: Float64Array }) => {
        if (m.type !== type) return
        worker.off('message', on)
        resolve(m)
      }
      worker.on('message', on)
      worker.once('error', reject)
    })
  await fromWorker('connected')
  console.log(`${READERS} readers connected (worker thread)`)

  // 1. Fixed rate: RATE hooks/s for SECONDS, sent in 10 ms slices.
  let seq = 0
  const t0 = performance.now()
  const sends: Promise<void>[] = []
  while (seq < total) {
    const due = Math.min(total, Math.floor(((performance.now() - t0) / 1000) * RATE))
    while (seq < due) {
      const s = seq++
      sends.push(
        post(base, `/hooks/${TOKEN}`, JSON.stringify({ text: `seq:${s}` })).then((r) => {
          if (r.status !== 200) throw new Error(`hook ${r.status}`)
          accepted[s] = performance.timeOrigin + performance.now()
        }),
      )
    }
    await new Promise((r) => setTimeout(r, 10))
  }
  await Promise.all(sends)
  const achieved = total / ((performance.now() - t0) / 1000)
  const expected = total * READERS
  const deadline = performance.now() + 30_000
  for (;;) {
    const counted = fromWorker('count')
    worker.postMessage({ type: 'count' })
    if (((await counted).events ?? 0) >= expected || performance.now() > deadline) break
    await new Promise((r) => setTimeout(r, 50))
  }
  const reported = fromWorker('report')
  worker.postMessage({ type: 'report', accepted })
  const latencies = (await reported).latencies!.sort()
  console.log(
    `fan-out at ${RATE} hooks/s x ${READERS} readers: ${latencies.length}/${expected} events received; ` +
      `hook accept -> event p50 ${quantile(latencies, 0.5).toFixed(1)} ms, p99 ${quantile(latencies, 0.99).toFixed(1)} ms, ` +
      `max ${latencies.at(-1)?.toFixed(1)} ms (hooks sent at ${achieved.toFixed(0)}/s)`,
  )

  // 2. Closed-loop ingest with the readers connected.
  const cpu1 = server.cpuSeconds()
  const withReaders = await closedLoop(base, SECONDS, 2_000_000)
  const cpuReaders = (server.cpuSeconds() - cpu1) / (withReaders * SECONDS)
  console.log(
    `ingest, ${READERS} readers: ${withReaders.toFixed(0)} hooks/s; ratio to no readers ${(withReaders / baseline).toFixed(2)}; ` +
      `notify CPU ${(cpuReaders * 1e6).toFixed(0)} µs per hook (${(cpuReaders / cpuBaseline).toFixed(2)}x the cost with no readers)`,
  )
  await worker.terminate()
} finally {
  await server?.stop()
  agent.destroy()
  dir.remove()
}
