/**
 * Benchmark tools shared by the workspaces' `bench/` scripts: a lean closed-loop HTTP/1.1
 * load generator and the CPU time of a server process.
 *
 * The generator works like wrk: raw keep-alive TCP connections with one request in flight
 * on each, requests pre-built as bytes, answers parsed only as far as needed (status line,
 * Content-Length, body length). On these 2-core machines it shares the CPUs with the
 * server under test, so its own cost caps what any server can show; node's HTTP clients
 * cost several times more per request. It treats every server alike: the only per-server
 * input is the address and the request bytes.
 */
import { existsSync, readFileSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import { availableParallelism } from 'node:os'

export interface HttpRequestSpec {
  method?: string
  /** Path and query, e.g. `/hooks/abc?x=1`. */
  path: string
  /** The Host header. */
  host: string
  headers?: Record<string, string>
  body?: string | Buffer
}

/** One HTTP/1.1 request as bytes (Content-Length added when there is a body). */
export function buildHttpRequest(spec: HttpRequestSpec): Buffer {
  const body = spec.body === undefined ? undefined : Buffer.from(spec.body)
  let head = `${spec.method ?? 'GET'} ${spec.path} HTTP/1.1\r\nhost: ${spec.host}\r\n`
  for (const [k, v] of Object.entries(spec.headers ?? {})) head += `${k}: ${v}\r\n`
  if (body) head += `content-length: ${body.length}\r\n`
  const bytes = Buffer.from(`${head}\r\n`, 'latin1')
  return body ? Buffer.concat([bytes, body]) : bytes
}

export interface HttpLoadOptions {
  host: string
  port: number
  /** Sent in turn across all connections. */
  requests: Buffer[]
  /** Instead: connection i sends `perConnection[i % length]` in turn (a client per site). */
  perConnection?: Buffer[][]
  connections: number
  durationMs: number
  /** Which statuses count as answered (default 2xx); the others are errors. */
  ok?: (status: number) => boolean
  /**
   * Keep-alive connections that go quiet, as a browser's between page views: each connection
   * sends for `everyMs`, then waits `forMs` with the connection open, and again.
   */
  pause?: { everyMs: number; forMs: number }
}

export interface HttpLoadResult {
  /** Answers with an `ok` status. */
  requests: number
  /** Other statuses, answers without Content-Length, socket errors. */
  errors: number
  seconds: number
  rps: number
  /** Milliseconds from sending each request to its complete answer. */
  latencies: number[]
}

const CRLF2 = Buffer.from('\r\n\r\n')

/**
 * Run the load for `durationMs`. A connection the server closes (a keep-alive limit, an
 * error) is reopened until the time is up.
 */
export async function httpLoad(o: HttpLoadOptions): Promise<HttpLoadResult> {
  const ok = o.ok ?? ((s: number) => s >= 200 && s < 300)
  let answered = 0
  let errors = 0
  let next = 0
  const latencies: number[] = []
  const started = performance.now()
  const deadline = started + o.durationMs

  const connection = (index: number) =>
    new Promise<void>((resolve) => {
      const own = o.perConnection?.[index % o.perConnection.length]
      let sent = 0
      let socket: Socket
      let buf: Buffer = Buffer.alloc(0)
      let bodyLeft = -1 // -1: reading the head
      let status = 0
      let sentAt = 0
      let finished = false
      let activeSince = performance.now()

      const finish = () => {
        if (finished) return
        finished = true
        socket.destroy()
        resolve()
      }
      const send = () => {
        sentAt = performance.now()
        if (sentAt >= deadline) return finish()
        socket.write(own !== undefined ? own[sent++ % own.length]! : o.requests[next++ % o.requests.length]!)
      }
      const onData = (chunk: Buffer) => {
        buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk])
        for (;;) {
          if (bodyLeft < 0) {
            const end = buf.indexOf(CRLF2)
            if (end < 0) return
            const head = buf.toString('latin1', 0, end)
            status = Number(head.slice(9, 12))
            const m = /\r\ncontent-length:\s*(\d+)/i.exec(head)
            if (!m) {
              errors++
              socket.destroy()
              return
            }
            bodyLeft = Number(m[1])
            buf = buf.subarray(end + 4)
          }
          if (buf.length < bodyLeft) {
            bodyLeft -= buf.length
            buf = Buffer.alloc(0)
            return
          }
          buf = buf.subarray(bodyLeft)
          bodyLeft = -1
          latencies.push(performance.now() - sentAt)
          if (ok(status)) answered++
          else errors++
          if (o.pause !== undefined && performance.now() - activeSince >= o.pause.everyMs) {
            setTimeout(() => {
              activeSince = performance.now()
              if (!finished) send()
            }, o.pause.forMs)
            return
          }
          send()
          if (finished || buf.length === 0) return
        }
      }
      const open = () => {
        buf = Buffer.alloc(0)
        bodyLeft = -1
        socket = connect({ host: o.host, port: o.port, noDelay: true })
        socket.on('connect', send)
        socket.on('data', onData)
        socket.on('error', () => {
          errors++
        })
        socket.on('close', () => {
          if (finished) return
          if (performance.now() >= deadline) return finish()
          open()
        })
      }
      open()
    })

  await Promise.all(Array.from({ length: o.connections }, (_, i) => connection(i)))
  const seconds = (performance.now() - started) / 1000
  return { requests: answered, errors, seconds, rps: answered / seconds, latencies }
}

/**
 * CPU time a process has used so far, in seconds (Linux /proc), with its direct children
 * when asked (nginx's workers are children of its master).
 */
export function processCpu(pid: number, options: { children?: boolean } = {}): { user: number; system: number } {
  const ticks = (p: number) => {
    const stat = readFileSync(`/proc/${p}/stat`, 'latin1')
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return [Number(f[11]), Number(f[12])] as const // utime, stime
  }
  const childrenFile = `/proc/${pid}/task/${pid}/children`
  const kids =
    options.children && existsSync(childrenFile)
      ? readFileSync(childrenFile, 'latin1').trim().split(/\s+/).filter(Boolean).map(Number)
      : []
  let user = 0
  let system = 0
  for (const p of [pid, ...kids]) {
    const [u, s] = ticks(p)
    user += u
    system += s
  }
  return { user: user / 100, system: system / 100 } // USER_HZ is 100 on Linux
}

/** CPU seconds of a whole machine: `busy` for work done, `total` for every core's time. */
export interface MachineSpent {
  busy: number
  total: number
}

/**
 * CPU seconds of the whole machine so far (Linux /proc/stat, every core): `busy` counts every
 * process, interrupts, softirqs and kernel threads (loopback delivery and a relay's kernel
 * work land there, whichever process they are charged to); `total` adds idle time and the
 * time the hypervisor ran something else (steal), which is no work of ours.
 */
export function machineCpu(): MachineSpent {
  const line = readFileSync('/proc/stat', 'latin1').split('\n', 1)[0]!
  // cpu  user nice system idle iowait irq softirq steal (guest time is already in user)
  const [user, nice, system, idle, iowait, irq, softirq, steal] = line.trim().split(/\s+/).slice(1, 9).map(Number)
  const busy = user! + nice! + system! + irq! + softirq!
  return { busy: busy / 100, total: (busy + idle! + iowait! + steal!) / 100 } // USER_HZ is 100 on Linux
}

/** Runs `work` and adds the machine's CPU over it to `side`; `work`'s result. */
export async function machineCpuDuring<T>(side: MachineSpent, work: () => Promise<T>): Promise<T> {
  const before = machineCpu()
  const result = await work()
  const after = machineCpu()
  side.busy += after.busy - before.busy
  side.total += after.total - before.total
  return result
}

/**
 * A relay benchmark's line on the whole machine: CPU-seconds per GiB through the gate and
 * direct, how many cores each kept busy, and the bound that puts on the ratio when the client,
 * the server and the gate share those cores: a gated transfer using every core moves at most
 * `cores / (its CPU-seconds per GiB)` GiB/s, which is `bound` of the direct rate.
 */
export function relayBoundLine(
  m: { gate: MachineSpent; direct: MachineSpent },
  gibPerSide: number,
  directGiBps: number,
): string {
  const cores = availableParallelism()
  const perGiB = (s: MachineSpent) => s.busy / gibPerSide
  const busyCores = (s: MachineSpent) => (s.total > 0 ? (s.busy * cores) / s.total : 0)
  const bound = cores / perGiB(m.gate) / directGiBps
  return `whole machine (${cores} cores, every process, softirqs and kernel threads): through the gate ${perGiB(m.gate).toFixed(2)} CPU-s per GiB, ${busyCores(m.gate).toFixed(2)} cores busy; direct ${perGiB(m.direct).toFixed(2)} CPU-s per GiB, ${busyCores(m.direct).toFixed(2)} cores busy -> with every core busy the gated transfer could reach at most ${bound.toFixed(2)}x the direct rate`
}

/**
 * Run `work` while a 1 ms timer measures the longest stop of this process's event loop: what a
 * request to a server doing that work in this process (SQLite's, on its one thread) would wait.
 * Returns the work's wall time and result too.
 */
export async function loopStallDuring<T>(work: () => Promise<T>): Promise<{ ms: number; longest: number; result: T }> {
  let last = performance.now()
  let longest = 0
  const tick = setInterval(() => {
    const t = performance.now()
    longest = Math.max(longest, t - last)
    last = t
  }, 1)
  await new Promise((resolve) => setTimeout(resolve, 20))
  longest = 0
  const started = performance.now()
  const result = await work()
  const ms = performance.now() - started
  await new Promise((resolve) => setTimeout(resolve, 20))
  clearInterval(tick)
  return { ms, longest, result }
}
