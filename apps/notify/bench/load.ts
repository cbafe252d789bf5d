/**
 * Closed-loop HTTP load generators: `connections` keep-alive connections, each sending
 * the next request as soon as the previous answer arrives, for a fixed time.
 *
 * `load` (the default) is testkit's `httpLoad`, which works like wrk: raw sockets writing
 * one pre-built request and parsing only the status line and Content-Length of each
 * answer. The generator runs on the same 2 cores as the server under test, so its own CPU
 * cost caps what any server can show; node's http client costs several times more per
 * request than this.
 * `loadWithHttpClient` is the earlier generator (node:http Agent), kept to compare
 * (NOTIFY_BENCH_CLIENT=http). Both measure the same requests for baseline and notify.
 */
import http from 'node:http'
import { buildHttpRequest, httpLoad } from '@gatehouse/testkit'

export interface LoadResult {
  requests: number
  errors: number
  seconds: number
  rps: number
  latencies: number[]
}

export interface LoadOptions {
  url: string
  method?: string
  headers?: Record<string, string>
  body?: string
  connections: number
  durationMs: number
  /** Status that counts as success (default: any 2xx). */
  okStatus?: (status: number) => boolean
}

/** The raw-socket generator (testkit's `httpLoad`), or node:http with NOTIFY_BENCH_CLIENT=http. */
export async function load(o: LoadOptions): Promise<LoadResult> {
  if (process.env.NOTIFY_BENCH_CLIENT === 'http') return loadWithHttpClient(o)
  const u = new URL(o.url)
  const request = buildHttpRequest({
    method: o.method ?? 'GET',
    path: `${u.pathname}${u.search}`,
    host: u.host,
    ...(o.headers ? { headers: o.headers } : {}),
    ...(o.body !== undefined ? { body: o.body } : {}),
  })
  return httpLoad({
    host: u.hostname,
    port: Number(u.port),
    requests: [request],
    connections: o.connections,
    durationMs: o.durationMs,
    ...(o.okStatus ? { ok: o.okStatus } : {}),
  })
}

function once(agent: http.Agent, o: LoadOptions): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(o.url, { method: o.method ?? 'GET', headers: o.headers, agent }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode ?? 0))
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(o.body)
  })
}

/** The node:http generator (more CPU per request in the bench process). */
export async function loadWithHttpClient(o: LoadOptions): Promise<LoadResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: o.connections })
  const ok = o.okStatus ?? ((s: number) => s >= 200 && s < 300)
  let requests = 0
  let errors = 0
  const latencies: number[] = []
  const start = performance.now()
  const end = start + o.durationMs
  const worker = async () => {
    while (performance.now() < end) {
      const t = performance.now()
      try {
        const status = await once(agent, o)
        if (ok(status)) requests++
        else errors++
      } catch {
        errors++
      }
      latencies.push(performance.now() - t)
    }
  }
  await Promise.all(Array.from({ length: o.connections }, worker))
  const seconds = (performance.now() - start) / 1000
  agent.destroy()
  return { requests, errors, seconds, rps: requests / seconds, latencies }
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}
