/**
 * `node bench/stream.ts` (from apps/notify): realtime fan-out on SQLite.
 *   1. Latency: R connected readers (SSE), hooks posted at H per second for S seconds;
 *      per (reader, notification): time from the hook's 200 arriving at the sender to the
 *      event arriving at the reader (p50/p99/max).
 *   2. Ingest ratio: closed-loop hook throughput (C keep-alive connections, S seconds)
 *      with the R readers connected, against the same run with no reader connected.
 * Environment: NOTIFY_BENCH_READERS (default 1000), NOTIFY_BENCH_RATE (1000),
 * NOTIFY_BENCH_SECONDS (5), NOTIFY_BENCH_CONNECTIONS (16).
 * Readers and senders run in this process, notify in its own (bench/servers.ts).
 */
import http from 'node:http'
import os from 'node:os'
import { join } from 'node:path'
import { tempDir } from '@gatehouse/testkit'
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

/** A reader's stream; calls onEvent(seq, receivedAt) for every notification carrying `seq:N`. */
function openReader(base: string, cookie: string, onEvent: (seq: number, at: number) => void): Promise<() => void> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${base}/api/v1/stream`, { headers: { cookie }, agent: false }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`stream: ${res.statusCode}`))
      res.setEncoding('utf8')
      let buf = ''
      let ready = false
      res.on('data', (chunk: string) => {
        const at = performance.now()
        buf += chunk
        let i = buf.indexOf('\n\n')
        while (i >= 0) {
          const block = buf.slice(0, i)
          buf = buf.slice(i + 2)
          if (!ready && block.includes('event: ready')) {
            ready = true
            resolve(() => req.destroy())
          }
          const m = /"text":"seq:(\d+)"|seq:(\d+)/.exec(block)
          if (m && block.includes('event: notification')) onEvent(Number(m[1] ?? m[2]), at)
          i = buf.indexOf('\n\n')
        }
      })
    })
    req.on('error', reject)
  })
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN
}

async function closedLoop(base: string, seconds: number, start: number): Promise<number> {
  let done = 0
  const end = performance.now() + seconds * 1000
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (performance.now() < end) {
        const r = await post(base, `/hooks/${TOKEN}`, JSON.stringify({ text: `seq:${start + done}` }))
        if (r.status !== 200) throw new Error(`hook ${r.status}`)
        done++
      }
    }),
  )
  return done / seconds
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
  })
  const base = server.base
  // Development mode (no reader password): every stream is the local administrator's.
  const cookie = ''

  const baseline = await closedLoop(base, SECONDS, 1_000_000)
  console.log(`ingest, no readers: ${baseline.toFixed(0)} hooks/s (${CONNECTIONS} connections, ${SECONDS} s)`)

  const accepted = new Map<number, number>()
  const latencies: number[] = []
  const early: Array<[number, number]> = []
  const closers: Array<() => void> = []
  for (let i = 0; i < READERS; i++)
    closers.push(
      await openReader(base, cookie, (seq, at) => {
        const t0 = accepted.get(seq)
        if (t0 === undefined) early.push([seq, at])
        else latencies.push(at - t0)
      }),
    )
  console.log(`${READERS} readers connected`)

  // 1. Fixed rate: RATE hooks/s for SECONDS, sent in 10 ms slices.
  let seq = 0
  const total = RATE * SECONDS
  const t0 = performance.now()
  const sends: Promise<void>[] = []
  while (seq < total) {
    const due = Math.min(total, Math.floor(((performance.now() - t0) / 1000) * RATE))
    while (seq < due) {
      const s = seq++
      sends.push(
        post(base, `/hooks/${TOKEN}`, JSON.stringify({ text: `seq:${s}` })).then((r) => {
          if (r.status !== 200) throw new Error(`hook ${r.status}`)
          accepted.set(s, performance.now())
        }),
      )
    }
    await new Promise((r) => setTimeout(r, 10))
  }
  await Promise.all(sends)
  const expected = total * READERS
  const deadline = performance.now() + 30_000
  while (latencies.length + early.length < expected && performance.now() < deadline)
    await new Promise((r) => setTimeout(r, 50))
  for (const [s, at] of early) latencies.push(Math.max(0, at - accepted.get(s)!))
  latencies.sort((a, b) => a - b)
  const achieved = total / ((performance.now() - t0) / 1000)
  console.log(
    `fan-out at ${RATE} hooks/s x ${READERS} readers: ${latencies.length}/${expected} events received; ` +
      `hook accept -> event p50 ${quantile(latencies, 0.5).toFixed(1)} ms, p99 ${quantile(latencies, 0.99).toFixed(1)} ms, ` +
      `max ${latencies.at(-1)?.toFixed(1)} ms (sent at ${achieved.toFixed(0)}/s overall incl. drain)`,
  )

  // 2. Closed-loop ingest with the readers connected.
  const withReaders = await closedLoop(base, SECONDS, 2_000_000)
  console.log(
    `ingest, ${READERS} readers: ${withReaders.toFixed(0)} hooks/s; ratio to no readers ${(withReaders / baseline).toFixed(2)}`,
  )
  for (const close of closers) close()
} finally {
  await server?.stop()
  agent.destroy()
  dir.remove()
}
