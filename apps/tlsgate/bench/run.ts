/**
 * `npm run bench -w apps/tlsgate`: the gate (`tlsgate serve` as a child process, PROXY v2 off)
 * in front of a real nginx (testkit) against the same nginx directly, in the same run:
 *   1. new TLS connections per second (full handshakes, no resumption), closed loop
 *   2. handshake latency added (sequential connect + handshake, p50 / p99)
 *   3. bulk throughput of one HTTPS download of BENCH_BYTES (default 256 MiB), best of 3
 *   4. memory of the gate process per idle relayed connection (1024 connections)
 * Loopback only; stops by itself (about a minute).
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os'
import { join } from 'node:path'
import { type TLSSocket, connect as tlsConnect } from 'node:tls'
import { type Child, createTestCa, freePort, startChild, startNginx, tempDir } from '@gatehouse/testkit'

const MAIN = join(import.meta.dirname, '..', 'src', 'main.ts')
const BYTES = Number(process.env.BENCH_BYTES ?? 256 * 1024 ** 2)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 4)
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32)
const IDLE = Number(process.env.BENCH_IDLE ?? 1024)
/** Which sections to run, e.g. `BENCH_SECTIONS=3` for the download only (default all). */
const SECTIONS = new Set((process.env.BENCH_SECTIONS ?? '1,2,3,4').split(','))

const say = (s: string) => process.stdout.write(`${s}\n`)
const f = (n: number, d = 0) => n.toFixed(d)
const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}x`

/** One full TLS handshake to `port` (no session reuse), resolved with the open socket. */
function handshake(port: number): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const s = tlsConnect({ host: '127.0.0.1', port, servername: 'bench.example.test', rejectUnauthorized: false })
    s.once('secureConnect', () => resolve(s))
    s.once('error', reject)
  })
}

async function closedLoop(port: number, concurrency: number, seconds: number) {
  const end = performance.now() + seconds * 1000
  let ops = 0
  let errors = 0
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        try {
          ;(await handshake(port)).destroy()
          ops++
        } catch {
          errors++
        }
      }
    }),
  )
  return { perSecond: ops / seconds, errors }
}

async function latencies(port: number, n: number): Promise<number[]> {
  const out: number[] = []
  for (let i = 0; i < n; i++) {
    const t = performance.now()
    ;(await handshake(port)).destroy()
    out.push(performance.now() - t)
  }
  return out
}

const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!

/** GET /big over one TLS connection; resolves with MB/s of the body. */
function download(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const t = performance.now()
    const s = tlsConnect({ host: '127.0.0.1', port, servername: 'bench.example.test', rejectUnauthorized: false }, () =>
      s.write('GET /big HTTP/1.1\r\nHost: bench.example.test\r\nConnection: close\r\n\r\n'),
    )
    let got = 0
    s.on('data', (d: Buffer) => {
      got += d.length
    })
    s.on('error', reject)
    s.on('close', () => {
      if (got < BYTES) reject(new Error(`short download: ${got} bytes`))
      else resolve(BYTES / 1024 ** 2 / ((performance.now() - t) / 1000))
    })
  })
}

function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return Number(m?.[1] ?? 0) * 1024
}

/** CPU seconds (user + system) the process used so far, from /proc (clock ticks of 10 ms). */
function cpuOf(pid: number): number {
  const { user, system } = cpuSplitOf(pid)
  return user + system
}

/** User and system (kernel: socket copies, TCP) CPU seconds of the process so far. */
function cpuSplitOf(pid: number): { user: number; system: number } {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
  return { user: Number(fields[11]) / 100, system: Number(fields[12]) / 100 }
}

async function main() {
  const work = tempDir('tlsgate-bench-')
  const ca = createTestCa()
  const cert = ca.issueServer(['bench.example.test'])
  const big = Buffer.alloc(BYTES, 'x')
  const nginx = await startNginx({ cert: cert.cert, key: cert.key, files: { big, 'index.html': 'ok\n' } })
  const gatePort = await freePort()
  const config = join(work.path, 'config.json')
  writeFileSync(config, '{}')
  let gate: Child | undefined
  try {
    gate = await startChild({
      name: 'tlsgate',
      command: process.execPath,
      args: [
        MAIN,
        'serve',
        '--route',
        `127.0.0.1:${gatePort}=127.0.0.1:${nginx.port}`,
        '--db',
        join(work.path, 'gate.db'),
        '--config',
        config,
        // Every connection comes from 127.0.0.1: lift the per-IP budget (it still runs).
        '--ip-rate',
        '1000000',
        '--ip-burst',
        '1000000',
        '--max-connections',
        '100000',
        '--log-level',
        'info',
      ],
      logFile: join(work.path, 'tlsgate.log'),
      readyLine: /tlsgate ready/,
    })
    say('# tlsgate benchmark')
    say(
      `machine: ${availableParallelism()} x ${cpus()[0]?.model ?? 'cpu'}, ${f(totalmem() / 1024 ** 3, 1)} GiB RAM; node ${process.version}`,
    )
    say(
      `load average at start: ${loadavg()
        .map((x) => f(x, 1))
        .join(' ')} (other work on this machine skews every figure)`,
    )
    say(
      `settings: ${SECONDS}s per rate run, concurrency ${CONCURRENCY}, download ${BYTES} bytes, ${IDLE} idle connections`,
    )
    say('')

    if (SECTIONS.has('4')) {
      // 4. Memory first, on a fresh gate.
      const base = rssOf(gate.pid)
      const idle: TLSSocket[] = []
      for (let i = 0; i < IDLE; i += 64) {
        idle.push(...(await Promise.all(Array.from({ length: Math.min(64, IDLE - i) }, () => handshake(gatePort)))))
      }
      await new Promise((r) => setTimeout(r, 500))
      const loaded = rssOf(gate.pid)
      for (const s of idle) s.destroy()
      say('## 4. Memory of the gate process with idle relayed TLS connections')
      say(
        `idle gate RSS ${f(base / 1024 ** 2, 1)} MiB; with ${IDLE} relayed idle connections ${f(loaded / 1024 ** 2, 1)} MiB: +${f((loaded - base) / IDLE / 1024, 1)} KiB per connection (client and backend socket)`,
      )
      say('')
    }
    if (SECTIONS.has('1')) {
      // 1. New connections per second (warm up both first).
      await closedLoop(gatePort, 4, 0.5)
      await closedLoop(nginx.port, 4, 0.5)
      // Alternating halves, so a change in the machine's load hits both sides alike.
      const first = await closedLoop(nginx.port, CONCURRENCY, SECONDS / 2)
      const cpu0 = cpuOf(gate.pid)
      const gateHalves = [
        await closedLoop(gatePort, CONCURRENCY, SECONDS / 2),
        await closedLoop(gatePort, CONCURRENCY, SECONDS / 2),
      ]
      const gateCpuPerConn =
        ((cpuOf(gate.pid) - cpu0) * 1e6) / (((gateHalves[0]!.perSecond + gateHalves[1]!.perSecond) * SECONDS) / 2)
      const halves = [first, gateHalves[0]!, gateHalves[1]!, await closedLoop(nginx.port, CONCURRENCY, SECONDS / 2)]
      const sum = (a: { perSecond: number; errors: number }, b: { perSecond: number; errors: number }) => ({
        perSecond: (a.perSecond + b.perSecond) / 2,
        errors: a.errors + b.errors,
      })
      const direct = sum(halves[0]!, halves[3]!)
      const viaGate = sum(halves[1]!, halves[2]!)
      say('## 1. New TLS connections per second (full handshake with nginx, closed loop)')
      say(`through the gate: ${f(viaGate.perSecond)}/s (${viaGate.errors} errors)`)
      say(
        `direct to nginx:  ${f(direct.perSecond)}/s (${direct.errors} errors) -> ratio ${ratio(viaGate.perSecond, direct.perSecond)}`,
      )
      say(
        `gate CPU per connection: ${f(gateCpuPerConn)} µs (${f(1e6 / gateCpuPerConn)} per gate CPU-second; independent of the load generator)`,
      )
      say('')
    }
    if (SECTIONS.has('2')) {
      // 2. Handshake latency, interleaved in blocks.
      const g: number[] = []
      const d: number[] = []
      for (let i = 0; i < 10; i++) {
        g.push(...(await latencies(gatePort, 20)))
        d.push(...(await latencies(nginx.port, 20)))
      }
      say('## 2. Connect + TLS handshake latency, sequential (200 each)')
      say(`through the gate: p50 ${f(pct(g, 0.5), 2)} ms, p99 ${f(pct(g, 0.99), 2)} ms`)
      say(
        `direct to nginx:  p50 ${f(pct(d, 0.5), 2)} ms, p99 ${f(pct(d, 0.99), 2)} ms -> added p50 ${f(pct(g, 0.5) - pct(d, 0.5), 2)} ms`,
      )
      say('')
    }
    if (SECTIONS.has('3')) {
      // 3. Bulk throughput, alternating, best of 3, with every process's CPU per GiB: the
      // client, nginx and the gate share two cores, so the gate's CPU is what it takes away.
      const nginxPid = Number(readFileSync(join(nginx.dir, 'nginx.pid'), 'utf8').trim())
      const bg: number[] = []
      const bd: number[] = []
      const spent = { gate: { user: 0, system: 0 }, nginxGate: 0, nginxDirect: 0, clientGate: 0, clientDirect: 0 }
      const clientCpu = () => {
        const u = process.cpuUsage()
        return (u.user + u.system) / 1e6
      }
      for (let i = 0; i < 3; i++) {
        const [g0, n0, c0] = [cpuSplitOf(gate.pid), cpuOf(nginxPid), clientCpu()]
        bg.push(await download(gatePort))
        const g1 = cpuSplitOf(gate.pid)
        spent.gate.user += g1.user - g0.user
        spent.gate.system += g1.system - g0.system
        spent.nginxGate += cpuOf(nginxPid) - n0
        spent.clientGate += clientCpu() - c0
        const [n1, c1] = [cpuOf(nginxPid), clientCpu()]
        bd.push(await download(nginx.port))
        spent.nginxDirect += cpuOf(nginxPid) - n1
        spent.clientDirect += clientCpu() - c1
      }
      const [mg, md] = [Math.max(...bg), Math.max(...bd)]
      const perGiB = (cpu: number) => f(cpu / ((3 * BYTES) / 1024 ** 3), 2)
      say(`## 3. Bulk throughput, one HTTPS download of ${f(BYTES / 1024 ** 2)} MiB (best of 3)`)
      say(`through the gate: ${f(mg)} MiB/s; direct to nginx: ${f(md)} MiB/s -> ratio ${ratio(mg, md)} (goal >= 0.90)`)
      say(`  all runs: gate ${bg.map((x) => f(x)).join(', ')}; direct ${bd.map((x) => f(x)).join(', ')} MiB/s`)
      say(
        `gate CPU per GiB relayed: ${perGiB(spent.gate.user + spent.gate.system)} s (user ${perGiB(spent.gate.user)}, kernel ${perGiB(spent.gate.system)}; independent of the load generator)`,
      )
      say(
        `CPU per GiB, through the gate: nginx ${perGiB(spent.nginxGate)} + client ${perGiB(spent.clientGate)} + gate ${perGiB(spent.gate.user + spent.gate.system)} s; direct: nginx ${perGiB(spent.nginxDirect)} + client ${perGiB(spent.clientDirect)} s`,
      )
      say('')
    }
    say(
      `load average at end: ${loadavg()
        .map((x) => f(x, 1))
        .join(' ')}`,
    )
  } finally {
    await gate?.stop()
    await nginx.stop()
    ca.remove()
    work.remove()
  }
}

await main()
