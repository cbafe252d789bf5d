/**
 * `npm run bench -w apps/tlsgate`: the gate (`tlsgate serve` as a child process) in front of a
 * real nginx (testkit) against the same nginx directly, in the same run:
 *   1. new TLS connections per second (full handshakes, no resumption), closed loop
 *   2. handshake latency added (sequential connect + handshake, p50 / p99)
 *   3. bulk throughput of one HTTPS download of BENCH_BYTES (default 256 MiB), with the CPU per
 *      GiB of the gate, nginx and the client
 *   4. memory of the gate process per idle relayed connection (1024 connections)
 *   5. the refused path: a blocked fingerprint refused before the backend (refusals per second,
 *      gate CPU per refusal)
 *   6. SMTP with STARTTLS: sessions per second through the gate's SMTP route against direct
 *   7. PROXY protocol v2 on against off: a second gate with `--proxy-protocol` in front of an
 *      nginx listening with `proxy_protocol`, gate CPU per connection of each
 * Loopback only; stops by itself (about two minutes). `BENCH_PROFILE=<dir>` runs the gate
 * under `--cpu-prof` and leaves its profile there.
 */
import { spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync, writeFileSync } from 'node:fs'
import { createServer, connect as netConnect, type Socket } from 'node:net'
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os'
import { join } from 'node:path'
import { type TLSSocket, connect as tlsConnect } from 'node:tls'
import {
  type Child,
  createTestCa,
  freePort,
  machineCpuDuring,
  relayBoundLine,
  startChild,
  startNginx,
  tempDir,
} from '@gatehouse/testkit'
import { readClientHello } from '../src/wire/client-hello.ts'
import { computeFingerprints } from '../src/wire/fingerprints.ts'

const MAIN = join(import.meta.dirname, '..', 'src', 'main.ts')
const BYTES = Number(process.env.BENCH_BYTES ?? 256 * 1024 ** 2)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 4)
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32)
const IDLE = Number(process.env.BENCH_IDLE ?? 1024)
const BULK_RUNS = Number(process.env.BENCH_BULK_RUNS ?? 3)
/** `curl` (OpenSSL, a separate process) or `node` (node:tls in this process) downloads in section 3. */
const BULK_CLIENT = process.env.BENCH_CLIENT ?? 'curl'
/** Which sections to run, e.g. `BENCH_SECTIONS=3` for the download only (default all). */
const SECTIONS = new Set((process.env.BENCH_SECTIONS ?? '1,2,3,4,5,6,7').split(','))
const PROFILE = process.env.BENCH_PROFILE

const say = (s: string) => process.stdout.write(`${s}\n`)
const f = (n: number, d = 0) => n.toFixed(d)
const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}x`
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const TLS_OPTIONS = { host: '127.0.0.1', servername: 'bench.example.test', rejectUnauthorized: false } as const

/** One full TLS handshake to `port` (no session reuse), resolved with the open socket. */
function handshake(port: number): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const s = tlsConnect({ ...TLS_OPTIONS, port })
    s.once('secureConnect', () => resolve(s))
    s.once('error', reject)
  })
}

/** A TLS client the gate refuses: resolves when the connection fails before the handshake completes. */
function refusal(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = tlsConnect({ ...TLS_OPTIONS, port })
    s.once('secureConnect', () => {
      s.destroy()
      reject(new Error('the handshake completed: not refused'))
    })
    s.once('error', () => resolve())
    s.once('close', () => resolve())
  })
}

/** Reads CRLF lines from a plaintext socket until `done(line)`. */
function untilLine(s: Socket, done: (line: string) => boolean): Promise<void> {
  return new Promise((resolve, reject) => {
    let buffer = ''
    const onData = (d: Buffer) => {
      buffer += d.toString('latin1')
      for (let i = buffer.indexOf('\n'); i >= 0; i = buffer.indexOf('\n')) {
        const line = buffer.slice(0, i).replace(/\r$/, '')
        buffer = buffer.slice(i + 1)
        if (done(line)) {
          s.off('data', onData)
          s.off('error', reject)
          resolve()
          return
        }
      }
    }
    s.on('data', onData)
    s.once('error', reject)
  })
}

/** Greeting, EHLO, STARTTLS, TLS handshake (what every STARTTLS mail client does first), then close. */
async function smtpSession(port: number): Promise<void> {
  const plain = netConnect({ host: '127.0.0.1', port })
  try {
    await untilLine(plain, (l) => l.startsWith('220 '))
    plain.write('EHLO bench.example.test\r\n')
    await untilLine(plain, (l) => l.startsWith('250 '))
    plain.write('STARTTLS\r\n')
    await untilLine(plain, (l) => l.startsWith('220 '))
    plain.pause()
    await new Promise<void>((resolve, reject) => {
      const tls = tlsConnect({ socket: plain, servername: 'mail.example.test', rejectUnauthorized: false })
      tls.once('secureConnect', () => {
        tls.destroy()
        resolve()
      })
      tls.once('error', reject)
    })
  } finally {
    plain.destroy()
  }
}

async function closedLoop(op: () => Promise<unknown>, concurrency: number, seconds: number) {
  const end = performance.now() + seconds * 1000
  let ops = 0
  let errors = 0
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        try {
          await op()
          ops++
        } catch {
          errors++
        }
      }
    }),
  )
  return { ops, perSecond: ops / seconds, errors }
}

/**
 * Two closed loops in alternating halves (a, b, b, a), so a change in the machine's load hits
 * both alike; with the CPU seconds each watched process spent during each side's halves.
 */
async function alternate(a: () => Promise<unknown>, b: () => Promise<unknown>, pids: Record<string, number>) {
  const side = () => ({ ops: 0, errors: 0, cpu: Object.fromEntries(Object.keys(pids).map((k) => [k, 0])) })
  const result = { a: side(), b: side() }
  for (const which of ['a', 'b', 'b', 'a'] as const) {
    const before = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuOf(pid)]))
    const r = await closedLoop(which === 'a' ? a : b, CONCURRENCY, SECONDS / 2)
    result[which].ops += r.ops
    result[which].errors += r.errors
    for (const [k, pid] of Object.entries(pids)) result[which].cpu[k]! += cpuOf(pid) - before[k]!
  }
  const out = (x: ReturnType<typeof side>) => ({
    ...x,
    perSecond: x.ops / SECONDS,
    /** µs of each process per operation. */
    perOp: Object.fromEntries(Object.entries(x.cpu).map(([k, v]) => [k, (v * 1e6) / Math.max(1, x.ops)])),
  })
  return { a: out(result.a), b: out(result.b) }
}

async function latencies(op: () => Promise<unknown>, n: number): Promise<number[]> {
  const out: number[] = []
  for (let i = 0; i < n; i++) {
    const t = performance.now()
    await op()
    out.push(performance.now() - t)
  }
  return out
}

const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!
const median = (xs: number[]) => pct(xs, 0.5)

/** GET /big over one TLS connection with node:tls; resolves with MiB/s of the body. */
function nodeDownload(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const t = performance.now()
    const s = tlsConnect({ ...TLS_OPTIONS, port }, () =>
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

/** The same download with curl (OpenSSL) into /dev/null; its CPU shows up in our children's time. */
async function curlDownload(port: number): Promise<number> {
  const child = spawn(
    '/usr/bin/curl',
    [
      '-sk',
      '--http1.1',
      '-o',
      '/dev/null',
      '-w',
      '%{size_download} %{time_total}',
      '--resolve',
      `bench.example.test:${port}:127.0.0.1`,
      `https://bench.example.test:${port}/big`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  )
  let out = ''
  child.stdout.on('data', (d) => (out += d))
  const [code] = await once(child, 'close')
  const [size, seconds] = out.trim().split(' ').map(Number)
  if (code !== 0 || size !== BYTES) throw new Error(`curl download: exit ${code}, ${out}`)
  return BYTES / 1024 ** 2 / seconds!
}

function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return Number(m?.[1] ?? 0) * 1024
}

/**
 * User and system (kernel: socket copies, TCP) CPU seconds so far (clock ticks of 10 ms): the
 * process's own, its reaped children's (`children`), or both (`both`).
 */
function cpuSplitOf(
  pid: number | 'self',
  which: 'own' | 'children' | 'both' = 'own',
): { user: number; system: number } {
  const f = readFileSync(`/proc/${pid}/stat`, 'latin1').split(') ')[1]!.split(' ')
  // utime, stime are fields 14 and 15 of stat(5); cutime, cstime (reaped children) 16 and 17.
  const ticks = (own: number, children: number) =>
    (which === 'own'
      ? Number(f[own])
      : which === 'children'
        ? Number(f[children])
        : Number(f[own]) + Number(f[children])) / 100
  return { user: ticks(11, 13), system: ticks(12, 14) }
}

/**
 * The gate's CPU so far with its splice helpers' (reaped children: `tlsgate serve` starts no
 * other processes). A helper is counted once it has exited, so this first waits until the gate
 * has no running child (the transfer has ended; its helper follows at once).
 */
async function gateCpuSplit(pid: number): Promise<{ user: number; system: number }> {
  const children = `/proc/${pid}/task/${pid}/children`
  for (let i = 0; i < 100 && readFileSync(children, 'latin1').trim() !== ''; i++) {
    await new Promise((r) => setTimeout(r, 10))
  }
  return cpuSplitOf(pid, 'both')
}

/** CPU seconds (user + system) the process used so far. */
function cpuOf(pid: number): number {
  const { user, system } = cpuSplitOf(pid)
  return user + system
}

/** The JA4 the benchmark's node:tls client sends (a loopback listener reads one hello). */
async function clientFingerprint(): Promise<string> {
  const server = createServer()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const port = (server.address() as { port: number }).port
  const got = new Promise<string>((resolve, reject) => {
    server.once('connection', (socket: Socket) => {
      let buf = Buffer.alloc(0)
      socket.on('data', (d: Buffer) => {
        buf = Buffer.concat([buf, d])
        const state = readClientHello(buf)
        if (state.kind === 'more') return
        socket.destroy()
        if (state.kind === 'done') resolve(computeFingerprints(state.hello).ja4)
        else reject(state.error)
      })
    })
  })
  const client = tlsConnect({ ...TLS_OPTIONS, port })
  client.on('error', () => {})
  try {
    return await got
  } finally {
    client.destroy()
    server.close()
  }
}

async function metric(metricsPort: number, name: string, labels: Record<string, string>): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) return Number(line.split(' ').pop())
  }
  return 0
}

async function startGate(name: string, work: string, routes: string[], extra: string[], metricsPort?: number) {
  const config = join(work, `${name}.json`)
  writeFileSync(config, '{}')
  const db = join(work, `${name}.db`)
  const child = await startChild({
    name,
    command: process.execPath,
    args: [
      ...(PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE}`] : []),
      MAIN,
      'serve',
      ...routes.flatMap((r) => ['--route', r]),
      '--db',
      db,
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
      ...(metricsPort ? ['--metrics-listen', `127.0.0.1:${metricsPort}`] : []),
      ...extra,
    ],
    logFile: join(work, `${name}.log`),
    readyLine: /tlsgate ready/,
  })
  return { child, db }
}

async function main() {
  const work = tempDir('tlsgate-bench-')
  const ca = createTestCa()
  const cert = ca.issueServer(['bench.example.test', 'mail.example.test'])
  writeFileSync(join(work.path, 'server.crt'), cert.cert)
  writeFileSync(join(work.path, 'server.key'), cert.key)
  const big = Buffer.alloc(BYTES, 'x')
  const nginx = await startNginx({ cert: cert.cert, key: cert.key, files: { big, 'index.html': 'ok\n' } })
  const nginxPp = await startNginx({ cert: cert.cert, key: cert.key, proxyProtocol: true })
  const [gatePort, smtpGatePort, smtpPort, ppGatePort, plainGatePort, metricsPort] = [
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
  ]
  let gate: Child | undefined
  const ppGates: Child[] = []
  let smtp: Child | undefined
  try {
    smtp = await startChild({
      name: 'smtp-backend',
      command: process.execPath,
      args: [join(import.meta.dirname, 'smtp-backend.ts')],
      env: {
        ...process.env,
        SMTP_PORT: String(smtpPort),
        SMTP_CERT: join(work.path, 'server.crt'),
        SMTP_KEY: join(work.path, 'server.key'),
      },
      logFile: join(work.path, 'smtp.log'),
      readyLine: /smtp backend ready/,
    })
    const started = await startGate(
      'tlsgate',
      work.path,
      [`127.0.0.1:${gatePort}=127.0.0.1:${nginx.port}`, `smtp:127.0.0.1:${smtpGatePort}=127.0.0.1:${smtpPort}`],
      [],
      metricsPort,
    )
    gate = started.child
    const gatePid = gate.pid
    const nginxPid = Number(readFileSync(join(nginx.dir, 'nginx.pid'), 'utf8').trim())
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
      `settings: ${SECONDS}s per rate comparison, concurrency ${CONCURRENCY}, download ${BYTES} bytes x ${BULK_RUNS} with ${BULK_CLIENT}, ${IDLE} idle connections`,
    )
    say('')

    if (SECTIONS.has('4')) {
      // 4. Memory first, on a fresh gate.
      const base = rssOf(gatePid)
      const idle: TLSSocket[] = []
      for (let i = 0; i < IDLE; i += 64) {
        idle.push(...(await Promise.all(Array.from({ length: Math.min(64, IDLE - i) }, () => handshake(gatePort)))))
      }
      await sleep(500)
      const loaded = rssOf(gatePid)
      for (const s of idle) s.destroy()
      say('## 4. Memory of the gate process with idle relayed TLS connections')
      say(
        `idle gate RSS ${f(base / 1024 ** 2, 1)} MiB; with ${IDLE} relayed idle connections ${f(loaded / 1024 ** 2, 1)} MiB: +${f((loaded - base) / IDLE / 1024, 1)} KiB per connection (client and backend socket)`,
      )
      say('')
    }
    if (SECTIONS.has('1')) {
      await closedLoop(() => handshake(gatePort).then((s) => s.destroy()), 4, 0.5)
      await closedLoop(() => handshake(nginx.port).then((s) => s.destroy()), 4, 0.5)
      const r = await alternate(
        () => handshake(nginx.port).then((s) => s.destroy()),
        () => handshake(gatePort).then((s) => s.destroy()),
        { gate: gatePid, nginx: nginxPid },
      )
      say('## 1. New TLS connections per second (full handshake with nginx, closed loop)')
      say(`through the gate: ${f(r.b.perSecond)}/s (${r.b.errors} errors)`)
      say(
        `direct to nginx:  ${f(r.a.perSecond)}/s (${r.a.errors} errors) -> ratio ${ratio(r.b.perSecond, r.a.perSecond)}`,
      )
      say(
        `gate CPU per connection: ${f(r.b.perOp.gate!)} µs (${f(1e6 / r.b.perOp.gate!)} per gate CPU-second); nginx CPU per handshake: ${f(r.a.perOp.nginx!)} µs direct, ${f(r.b.perOp.nginx!)} µs through the gate`,
      )
      say('')
    }
    if (SECTIONS.has('2')) {
      const g: number[] = []
      const d: number[] = []
      for (let i = 0; i < 10; i++) {
        g.push(...(await latencies(() => handshake(gatePort).then((s) => s.destroy()), 20)))
        d.push(...(await latencies(() => handshake(nginx.port).then((s) => s.destroy()), 20)))
      }
      say('## 2. Connect + TLS handshake latency, sequential (200 each)')
      say(`through the gate: p50 ${f(pct(g, 0.5), 2)} ms, p99 ${f(pct(g, 0.99), 2)} ms`)
      say(
        `direct to nginx:  p50 ${f(pct(d, 0.5), 2)} ms, p99 ${f(pct(d, 0.99), 2)} ms -> added p50 ${f(pct(g, 0.5) - pct(d, 0.5), 2)} ms`,
      )
      say('')
    }
    if (SECTIONS.has('3')) {
      // 3. Bulk throughput, alternating, with every process's CPU per GiB: the client, nginx and
      // the gate share two cores, so the gate's CPU is what it takes away from the transfer.
      const download = BULK_CLIENT === 'node' ? nodeDownload : curlDownload
      const bg: number[] = []
      const bd: number[] = []
      const spent = { gate: { user: 0, system: 0 }, nginxGate: 0, nginxDirect: 0, clientGate: 0, clientDirect: 0 }
      const clientCpu = () => {
        if (BULK_CLIENT === 'node') {
          const u = process.cpuUsage()
          return (u.user + u.system) / 1e6
        }
        const c = cpuSplitOf('self', 'children')
        return c.user + c.system
      }
      // The whole machine's CPU over each download (softirqs and kernel threads included), and
      // its cores' busy share: what bounds the ratio when the client shares the gate's cores.
      const machine = { gate: { busy: 0, total: 0 }, direct: { busy: 0, total: 0 } }
      for (let i = 0; i < BULK_RUNS; i++) {
        const [g0, n0, c0] = [await gateCpuSplit(gatePid), cpuOf(nginxPid), clientCpu()]
        bg.push(await machineCpuDuring(machine.gate, () => download(gatePort)))
        const g1 = await gateCpuSplit(gatePid)
        spent.gate.user += g1.user - g0.user
        spent.gate.system += g1.system - g0.system
        spent.nginxGate += cpuOf(nginxPid) - n0
        spent.clientGate += clientCpu() - c0
        const [n1, c1] = [cpuOf(nginxPid), clientCpu()]
        bd.push(await machineCpuDuring(machine.direct, () => download(nginx.port)))
        spent.nginxDirect += cpuOf(nginxPid) - n1
        spent.clientDirect += clientCpu() - c1
      }
      const gib = (BULK_RUNS * BYTES) / 1024 ** 3
      const perGiB = (cpu: number) => f(cpu / gib, 2)
      const gateCpu = spent.gate.user + spent.gate.system
      const pairs = bg.map((g, i) => g / bd[i]!)
      say(`## 3. Bulk throughput, one HTTPS download of ${f(BYTES / 1024 ** 2)} MiB, ${BULK_CLIENT} client`)
      say(
        `through the gate: best ${f(Math.max(...bg))} MiB/s; direct to nginx: best ${f(Math.max(...bd))} MiB/s -> best/best ${ratio(Math.max(...bg), Math.max(...bd))}, median of pairs ${f(median(pairs), 2)}x (goal >= 0.90)`,
      )
      say(
        `  all runs: gate ${bg.map((x) => f(x)).join(', ')}; direct ${bd.map((x) => f(x)).join(', ')} MiB/s; pair ratios ${pairs.map((x) => f(x, 2)).join(', ')}`,
      )
      say(
        `gate CPU per GiB relayed: ${perGiB(gateCpu)} s (user ${perGiB(spent.gate.user)}, kernel ${perGiB(spent.gate.system)}); nginx CPU per GiB served: ${perGiB(spent.nginxDirect)} s direct -> gate / nginx ${ratio(gateCpu, spent.nginxDirect)}`,
      )
      say(
        `CPU per GiB, through the gate: nginx ${perGiB(spent.nginxGate)} + client ${perGiB(spent.clientGate)} + gate ${perGiB(gateCpu)} = ${perGiB(spent.nginxGate + spent.clientGate + gateCpu)} s; direct: nginx ${perGiB(spent.nginxDirect)} + client ${perGiB(spent.clientDirect)} = ${perGiB(spent.nginxDirect + spent.clientDirect)} s`,
      )
      say(`  ${relayBoundLine(machine, gib, median(bd) / 1024)}`)
      say('')
    }
    if (SECTIONS.has('6')) {
      await closedLoop(() => smtpSession(smtpGatePort), 4, 0.5)
      await closedLoop(() => smtpSession(smtpPort), 4, 0.5)
      const r = await alternate(
        () => smtpSession(smtpPort),
        () => smtpSession(smtpGatePort),
        { gate: gatePid, smtp: smtp.pid },
      )
      say('## 6. SMTP sessions per second: greeting, EHLO, STARTTLS, TLS handshake (closed loop)')
      say(`through the gate's SMTP route: ${f(r.b.perSecond)}/s (${r.b.errors} errors)`)
      say(
        `direct to the SMTP server:     ${f(r.a.perSecond)}/s (${r.a.errors} errors) -> ratio ${ratio(r.b.perSecond, r.a.perSecond)}`,
      )
      say(
        `gate CPU per session: ${f(r.b.perOp.gate!)} µs; SMTP server (node:tls) CPU per session: ${f(r.a.perOp.smtp!)} µs direct, ${f(r.b.perOp.smtp!)} µs through the gate`,
      )
      say('')
    }
    if (SECTIONS.has('7')) {
      // Two fresh gates, alike but for the flag, each warmed up the same way, compared twice over.
      const on = await startGate(
        'tlsgate-pp-on',
        work.path,
        [`127.0.0.1:${ppGatePort}=127.0.0.1:${nginxPp.port}`],
        ['--proxy-protocol'],
      )
      const off = await startGate(
        'tlsgate-pp-off',
        work.path,
        [`127.0.0.1:${plainGatePort}=127.0.0.1:${nginx.port}`],
        [],
      )
      ppGates.push(on.child, off.child)
      await closedLoop(() => handshake(ppGatePort).then((s) => s.destroy()), 8, 2)
      await closedLoop(() => handshake(plainGatePort).then((s) => s.destroy()), 8, 2)
      const rounds = [] as Awaited<ReturnType<typeof alternate>>[]
      for (let i = 0; i < 2; i++) {
        rounds.push(
          await alternate(
            () => handshake(plainGatePort).then((s) => s.destroy()),
            () => handshake(ppGatePort).then((s) => s.destroy()),
            { off: off.child.pid, on: on.child.pid },
          ),
        )
      }
      const sum = (k: 'a' | 'b', pid: 'on' | 'off') => {
        const ops = rounds.reduce((n, r) => n + r[k].ops, 0)
        const cpu = rounds.reduce((n, r) => n + r[k].cpu[pid]!, 0)
        return {
          perSecond: ops / (2 * SECONDS),
          errors: rounds.reduce((n, r) => n + r[k].errors, 0),
          perOp: (cpu * 1e6) / ops,
        }
      }
      const [withPp, without] = [sum('b', 'on'), sum('a', 'off')]
      say('## 7. PROXY protocol v2 towards the backend: on against off (new TLS connections, closed loop)')
      say(`gate with --proxy-protocol (nginx proxy_protocol): ${f(withPp.perSecond)}/s (${withPp.errors} errors)`)
      say(
        `gate without (nginx plain):                        ${f(without.perSecond)}/s (${without.errors} errors) -> ratio ${ratio(withPp.perSecond, without.perSecond)}`,
      )
      say(
        `gate CPU per connection: ${f(withPp.perOp)} µs on, ${f(without.perOp)} µs off -> ${f(withPp.perOp - without.perOp)} µs per connection for the header (per round: ${rounds.map((r) => `${f(r.b.perOp.on!)} / ${f(r.a.perOp.off!)}`).join(', ')} µs)`,
      )
      say('')
    }
    if (SECTIONS.has('5')) {
      // 5. Last: blocking the client's fingerprint refuses it on every route of this gate.
      const fp = await clientFingerprint()
      await handshake(gatePort).then((s) => s.destroy()) // observed (stored at the next flush)
      const deadline = Date.now() + 10_000
      for (;;) {
        const r = spawnSync(process.execPath, [MAIN, 'block', '--db', started.db, fp], { encoding: 'utf8' })
        if (r.status === 0) break
        if (Date.now() > deadline) throw new Error(`tlsgate block: ${r.stderr}`)
        await sleep(200)
      }
      await refusal(gatePort)
      const labels = { route: `127.0.0.1:${gatePort}` }
      const [refused0, allowed0] = [
        await metric(metricsPort, 'tlsgate_connection_results_total', { ...labels, result: 'refused_blocked' }),
        await metric(metricsPort, 'tlsgate_connection_results_total', { ...labels, result: 'allowed' }),
      ]
      const r = await alternate(
        () => handshake(nginx.port).then((s) => s.destroy()),
        () => refusal(gatePort),
        { gate: gatePid, nginx: nginxPid },
      )
      const refused =
        (await metric(metricsPort, 'tlsgate_connection_results_total', { ...labels, result: 'refused_blocked' })) -
        refused0
      const allowed =
        (await metric(metricsPort, 'tlsgate_connection_results_total', { ...labels, result: 'allowed' })) - allowed0
      say('## 5. Refused path: a blocked fingerprint gets the access_denied alert, the backend is never dialled')
      say(
        `refusals by the gate: ${f(r.b.perSecond)}/s (${r.b.errors} errors; gate counted ${refused} refused_blocked, ${allowed} allowed)`,
      )
      say(
        `full handshakes direct to nginx: ${f(r.a.perSecond)}/s -> refusals / handshakes ${ratio(r.b.perSecond, r.a.perSecond)}`,
      )
      say(
        `gate CPU per refusal: ${f(r.b.perOp.gate!)} µs (${f(1e6 / r.b.perOp.gate!)} per gate CPU-second); nginx CPU during the refusals: ${f(r.b.cpu.nginx!, 2)} s (none expected)`,
      )
      say(`blocked fingerprint: ${fp}`)
      say('')
    }
    say(
      `load average at end: ${loadavg()
        .map((x) => f(x, 1))
        .join(' ')}`,
    )
  } finally {
    for (const g of ppGates) await g.stop()
    await gate?.stop()
    await smtp?.stop()
    await nginx.stop()
    await nginxPp.stop()
    ca.remove()
    if (PROFILE) say(`gate CPU profile(s) in ${PROFILE}`)
    work.remove()
  }
}

await main()
