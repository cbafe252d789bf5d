/**
 * Closed-loop HTTP load generators: `connections` keep-alive connections, each sending
 * the next request as soon as the previous answer arrives, for a fixed time.
 *
 * `load` (the default) works like wrk: raw sockets writing one pre-built request and
 * parsing only the status line and Content-Length of each answer. The generator runs on
 * the same 2 cores as the server under test, so its own CPU cost caps what any server
 * can show; node's http client costs several times more per request than this.
 * `loadWithHttpClient` is the earlier generator (node:http Agent), kept to compare
 * (NOTIFY_BENCH_CLIENT=http). Both measure the same requests for baseline and notify.
 */
import http from 'node:http'
import net from 'node:net'

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

const HEADER_END = Buffer.from('\r\n\r\n')

/** One HTTP/1.1 request as bytes (Host and Content-Length added). */
function buildRequest(o: LoadOptions): Buffer {
  const u = new URL(o.url)
  const body = o.body === undefined ? undefined : Buffer.from(o.body)
  const lines = [`${o.method ?? 'GET'} ${u.pathname}${u.search} HTTP/1.1`, `host: ${u.host}`]
  for (const [k, v] of Object.entries(o.headers ?? {})) lines.push(`${k}: ${v}`)
  if (body) lines.push(`content-length: ${body.length}`)
  const head = Buffer.from(`${lines.join('\r\n')}\r\n\r\n`)
  return body ? Buffer.concat([head, body]) : head
}

/** Status code and total length of the first complete response in `buf`, if there is one. */
function parseResponse(buf: Buffer): { status: number; length: number } | undefined {
  const end = buf.indexOf(HEADER_END)
  if (end < 0) return undefined
  const head = buf.toString('latin1', 0, end)
  const status = Number(head.slice(9, 12))
  const m = /\r\ncontent-length:\s*(\d+)/i.exec(head)
  if (!m) throw new Error('response without content-length (chunked answers are not supported)')
  const length = end + 4 + Number(m[1])
  return buf.length >= length ? { status, length } : undefined
}

export async function load(o: LoadOptions): Promise<LoadResult> {
  if (process.env.NOTIFY_BENCH_CLIENT === 'http') return loadWithHttpClient(o)
  const u = new URL(o.url)
  const request = buildRequest(o)
  const ok = o.okStatus ?? ((s: number) => s >= 200 && s < 300)
  let requests = 0
  let errors = 0
  const latencies: number[] = []
  const start = performance.now()
  const end = start + o.durationMs
  const connection = () =>
    new Promise<void>((resolve) => {
      const socket = net.connect({ host: u.hostname, port: Number(u.port), noDelay: true })
      let pending: Buffer = Buffer.alloc(0)
      let sent = 0
      const send = () => {
        sent = performance.now()
        socket.write(request)
      }
      socket.on('connect', send)
      socket.on('data', (chunk: Buffer) => {
        pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk])
        let r: ReturnType<typeof parseResponse>
        try {
          r = parseResponse(pending)
        } catch {
          errors++
          socket.destroy()
          return
        }
        if (!r) return
        pending = pending.subarray(r.length)
        const now = performance.now()
        latencies.push(now - sent)
        if (ok(r.status)) requests++
        else errors++
        if (now < end) send()
        else socket.end()
      })
      socket.on('error', () => {
        errors++
      })
      socket.on('close', () => resolve())
    })
  await Promise.all(Array.from({ length: o.connections }, connection))
  const seconds = (performance.now() - start) / 1000
  return { requests, errors, seconds, rps: requests / seconds, latencies }
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
