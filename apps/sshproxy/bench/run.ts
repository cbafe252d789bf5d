/**
 * `npm run bench -w apps/sshproxy`: the gate (`sshproxy serve` as a child process) against a
 * direct connection to the same real sshd, in the same run:
 *   1. new connections per second, reject path and allow path
 *   2. bulk throughput of one SSH session moving BENCH_BYTES (default 1 GiB), download and upload,
 *      through the gate (long transfers in its splice helper), through a second gate relaying
 *      in-process (`--splice-after 0`) and directly, BENCH_BULK_ROUNDS (3) rotated rounds
 *   3. added latency to connection setup (p50, p99)
 *   4. memory with 1024 open idle connections
 * Loopback only; stops by itself (a few minutes).
 */
import { execFileSync, spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os'
import { join } from 'node:path'
import {
  type Child,
  freePort,
  type MachineSpent,
  machineCpuDuring,
  relayBoundLine,
  sshArgs,
  sshVersion,
  startChild,
  startSshd,
  tempDir,
} from '@gatehouse/testkit'
import { captureClientHello, cli, MAIN, NODE, OPENSSH_FP } from '../test/helpers.ts'
import {
  bareIdentServer,
  closedLoop,
  helloUntilClosed,
  helloUntilServerKexinit,
  identOnly,
  idleBackend,
  latencies,
  openMany,
  percentile,
} from './load.ts'

const BYTES = Number(process.env.BENCH_BYTES ?? 1024 ** 3)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 64)
/** Rounds of the bulk transfers (each: gate, in-process gate, direct, rotated). */
const BULK_ROUNDS = Number(process.env.BENCH_BULK_ROUNDS ?? 3)
/** Which sections to run, e.g. `BENCH_SECTIONS=2` for the transfers only (default all). */
const SECTIONS = new Set((process.env.BENCH_SECTIONS ?? '1,2,3,4').split(','))

const say = (s: string) => process.stdout.write(`${s}\n`)
const f = (n: number, d = 0) => n.toFixed(d)
const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}x`

async function metricValue(port: number, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
  const lines = text.split('\n').filter((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`))
  return lines.length === 0 ? Number.NaN : lines.reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0)
}

/**
 * The gate's CPU seconds so far, its splice helpers' included. A helper's CPU is counted when it
 * has exited, so this waits until none runs (the transfer has ended; its helper follows at once).
 */
async function gateCpuSeconds(port: number): Promise<number> {
  for (let i = 0; i < 50 && (await metricValue(port, 'sshproxy_splice_relays')) > 0; i++) {
    await new Promise((r) => setTimeout(r, 20))
  }
  const helpers = await metricValue(port, 'sshproxy_splice_helper_cpu_seconds_total')
  return (await metricValue(port, 'process_cpu_seconds_total')) + (Number.isNaN(helpers) ? 0 : helpers)
}

function runSsh(args: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const t = performance.now()
    const child = spawn('/usr/bin/ssh', args, { stdio: ['ignore', 'ignore', 'inherit'] })
    child.on('exit', (code) => (code === 0 ? resolve(performance.now() - t) : reject(new Error(`ssh exited ${code}`))))
  })
}

/** `ssh … 'cat > /dev/null'` fed BYTES zeros on stdin: the client-to-backend direction. */
function runSshUpload(args: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const t = performance.now()
    const source = spawn('/usr/bin/head', ['-c', String(BYTES), '/dev/zero'], { stdio: ['ignore', 'pipe', 'inherit'] })
    const child = spawn('/usr/bin/ssh', args, { stdio: [source.stdout, 'ignore', 'inherit'] })
    child.on('exit', (code) => (code === 0 ? resolve(performance.now() - t) : reject(new Error(`ssh exited ${code}`))))
  })
}

async function main() {
  const started = performance.now()
  const work = tempDir('sshproxy-bench-')
  const sshd = await startSshd()
  const idle = await idleBackend()
  const bare = await bareIdentServer()
  const [gatePort, idleRoutePort, metricsPort] = [await freePort(), await freePort(), await freePort()]
  const config = join(work.path, 'config.json')
  writeFileSync(config, '{}')
  const db = join(work.path, 'gate.db')
  let gate: Child | undefined
  let inProcess: Child | undefined
  const inProcessPort = await freePort()
  try {
    gate = await startChild({
      name: 'sshproxy',
      command: NODE,
      args: [
        // SSHPROXY_BENCH_PROFILE=<dir>: write a CPU profile of the gate (for finding hot spots).
        ...(process.env.SSHPROXY_BENCH_PROFILE
          ? ['--cpu-prof', '--cpu-prof-dir', process.env.SSHPROXY_BENCH_PROFILE]
          : []),
        MAIN,
        'serve',
        '--route',
        `127.0.0.1:${gatePort}=127.0.0.1:${sshd.port}`,
        '--route',
        `127.0.0.1:${idleRoutePort}=127.0.0.1:${idle.port}`,
        '--db',
        db,
        '--config',
        config,
        '--metrics-listen',
        `127.0.0.1:${metricsPort}`,
        // The bench comes from one address: lift the per-IP budget (it still runs) so it measures the gate.
        '--ip-rate',
        '1000000',
        '--ip-burst',
        '1000000',
        '--handshake-timeout',
        '10m',
      ],
      logFile: join(work.path, 'sshproxy.log'),
      readyLine: /sshproxy ready/,
    })
    const hello = await captureClientHello('openssh')
    // The reject path uses Dropbear's hello (never approved); the allow path and the relayed
    // sessions use OpenSSH's, approved once the gate has seen it.
    const unknownHello = await captureClientHello('dropbear')
    await helloUntilClosed(hello)(gatePort)
    for (let i = 0; (await cli(['approve', '--db', db, OPENSSH_FP])).code !== 0; i++) {
      if (i > 50) throw new Error('the gate did not record the OpenSSH fingerprint')
      await new Promise((r) => setTimeout(r, 200))
    }
    say('# sshproxy benchmark')
    say(
      `machine: ${availableParallelism()} x ${cpus()[0]?.model ?? 'cpu'}, ${f(totalmem() / 1024 ** 3, 1)} GiB RAM; node ${process.version}; ${await sshVersion()}`,
    )
    say(
      `load average at start: ${loadavg()
        .map((x) => f(x, 1))
        .join(' ')} (other work on this machine skews every figure)`,
    )
    say(
      `settings: ${SECONDS}s per rate run, concurrency ${CONCURRENCY}, transfer ${BYTES} bytes; gate log level info (one JSON line per connection)`,
    )
    say('')

    const home = work.path
    if (SECTIONS.has('4')) {
      // 4. Memory (first, on a fresh gate, so earlier load does not inflate the figures) with 1024 open idle connections.
      const rss = () => metricValue(metricsPort, 'process_resident_memory_bytes')
      const heap = () => metricValue(metricsPort, 'nodejs_heap_size_used_bytes')
      const base = { rss: await rss(), heap: await heap() }
      const handshaking = await openMany(idleRoutePort, 1024)
      const inHandshake = {
        rss: await rss(),
        heap: await heap(),
        active: await metricValue(metricsPort, 'sshproxy_active_connections'),
      }
      for (const s of handshaking) s.destroy()
      while ((await metricValue(metricsPort, 'sshproxy_active_connections')) > 0)
        await new Promise((r) => setTimeout(r, 100))
      const relayed = await openMany(idleRoutePort, 1024, hello)
      for (let i = 0; idle.sockets.size < 1024; i++) {
        if (i > 300) throw new Error(`only ${idle.sockets.size} of 1024 sessions reached the backend`)
        await new Promise((r) => setTimeout(r, 100))
      }
      const inRelay = { rss: await rss(), heap: await heap() }
      for (const s of relayed) s.destroy()
      const mib = (n: number) => f(n / 1024 ** 2, 1)
      say('## 4. Memory of the gate process with 1024 open idle connections')
      say(`idle gate: RSS ${mib(base.rss)} MiB, heap used ${mib(base.heap)} MiB`)
      say(
        `1024 clients waiting in the handshake (${inHandshake.active} active): RSS ${mib(inHandshake.rss)} MiB (+${f((inHandshake.rss - base.rss) / 1024 / 1024, 1)} KiB per connection), heap ${mib(inHandshake.heap)} MiB`,
      )
      say(
        `1024 relayed idle sessions (client + backend socket each): RSS ${mib(inRelay.rss)} MiB (+${f((inRelay.rss - base.rss) / 1024 / 1024, 1)} KiB per session), heap ${mib(inRelay.heap)} MiB`,
      )
      say(
        `  baseline: a direct connection costs the gate nothing; for scale, one sshd pre-auth process: ${sshdRss(sshd.dir)}`,
      )
      say('')
    }
    if (SECTIONS.has('1')) {
      // 1. Connection rates.
      const cpu0 = await metricValue(metricsPort, 'process_cpu_seconds_total')
      const rejectGate = await closedLoop(helloUntilClosed(unknownHello), gatePort, CONCURRENCY, SECONDS)
      const rejectCpuUs =
        (((await metricValue(metricsPort, 'process_cpu_seconds_total')) - cpu0) * 1e6) / rejectGate.ops
      const rejectDirect = await closedLoop(identOnly, sshd.port, CONCURRENCY, SECONDS)
      const rejectBare = await closedLoop(helloUntilClosed(unknownHello), bare.port, CONCURRENCY, SECONDS)
      say('## 1. New connections per second')
      say(
        `reject path, gate (connect, identification, KEXINIT, closed by the gate): ${f(rejectGate.perSecond)}/s (${rejectGate.errors} errors)`,
      )
      say(
        `  baseline direct sshd (connect, identification, close):                   ${f(rejectDirect.perSecond)}/s (${rejectDirect.errors} errors) -> ratio ${ratio(rejectGate.perSecond, rejectDirect.perSecond)}`,
      )
      say(
        `  floor: bare node:net server doing the same exchange:                      ${f(rejectBare.perSecond)}/s -> gate at ${ratio(rejectGate.perSecond, rejectBare.perSecond)} of it`,
      )
      const allowGate = await closedLoop(helloUntilServerKexinit(hello), gatePort, CONCURRENCY, SECONDS)
      const allowDirect = await closedLoop(helloUntilServerKexinit(hello), sshd.port, CONCURRENCY, SECONDS)
      say(
        `  gate CPU per rejected connection: ${f(rejectCpuUs)} µs (${f(1e6 / rejectCpuUs)} connections per CPU-second; independent of the load generator)`,
      )
      say(
        `allow path, gate (connect .. sshd's KEXINIT through the gate):              ${f(allowGate.perSecond)}/s (${allowGate.errors} errors)`,
      )
      say(
        `  baseline direct sshd (connect .. sshd's KEXINIT):                         ${f(allowDirect.perSecond)}/s (${allowDirect.errors} errors) -> ratio ${ratio(allowGate.perSecond, allowDirect.perSecond)}`,
      )
      say('')
    }

    if (SECTIONS.has('3')) {
      // 3. Added latency to connection setup (sequential, interleaved).
      const lg: number[] = []
      const ld: number[] = []
      for (let i = 0; i < 10; i++) {
        lg.push(...(await latencies(helloUntilServerKexinit(hello), gatePort, 30)))
        ld.push(...(await latencies(helloUntilServerKexinit(hello), sshd.port, 30)))
      }
      const sg: number[] = []
      const sd: number[] = []
      for (let i = 0; i < 15; i++) {
        sg.push(await runSsh(sshArgs({ port: gatePort, key: sshd.key, home, command: 'true' })))
        sd.push(await runSsh(sshArgs({ port: sshd.port, key: sshd.key, home, command: 'true' })))
      }
      say('## 3. Connection setup latency (sequential)')
      say(
        `connect .. server KEXINIT, ${lg.length} each: gate p50 ${f(percentile(lg, 50), 2)} ms p99 ${f(percentile(lg, 99), 2)} ms; direct p50 ${f(percentile(ld, 50), 2)} ms p99 ${f(percentile(ld, 99), 2)} ms; added p50 ${f(percentile(lg, 50) - percentile(ld, 50), 2)} ms p99 ${f(percentile(lg, 99) - percentile(ld, 99), 2)} ms`,
      )
      say(
        `full \`ssh host true\` (key auth), ${sg.length} each: gate p50 ${f(percentile(sg, 50), 1)} ms p99 ${f(percentile(sg, 99), 1)} ms; direct p50 ${f(percentile(sd, 50), 1)} ms p99 ${f(percentile(sd, 99), 1)} ms; added p50 ${f(percentile(sg, 50) - percentile(sd, 50), 1)} ms`,
      )
      say('')
    }

    if (SECTIONS.has('2')) {
      // 2. Bulk throughput of one SSH session each way: the gate (long transfers handed to the
      // splice helper), a second gate relaying in-process (`--splice-after 0`) and sshd directly,
      // rotated every round so a change in the machine's load hits all three.
      say('## 2. Bulk throughput of one SSH session')
      const inProcessMetrics = await freePort()
      inProcess = await startChild({
        name: 'sshproxy-in-process',
        command: NODE,
        args: [
          MAIN,
          'serve',
          '--route',
          `127.0.0.1:${inProcessPort}=127.0.0.1:${sshd.port}`,
          ...['--db', db, '--config', config, '--metrics-listen', `127.0.0.1:${inProcessMetrics}`],
          ...['--ip-rate', '1000000', '--ip-burst', '1000000', '--splice-after', '0'],
        ],
        logFile: join(work.path, 'sshproxy-in-process.log'),
        readyLine: /sshproxy ready/,
      })
      const targets = [
        { name: 'gate', port: gatePort, metrics: metricsPort },
        { name: 'in-process', port: inProcessPort, metrics: inProcessMetrics },
        { name: 'direct', port: sshd.port, metrics: 0 },
      ] as const
      const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
      const best = (xs: number[]) => Math.max(...xs)
      for (const direction of [
        { title: 'remote -> local (download)', upload: false },
        { title: 'local -> remote (upload)', upload: true },
      ]) {
        const rates: Record<string, number[]> = { gate: [], 'in-process': [], direct: [] }
        const cpu: Record<string, number> = { gate: 0, 'in-process': 0 }
        const machine: Record<string, MachineSpent> = Object.fromEntries(
          targets.map((t) => [t.name, { busy: 0, total: 0 }]),
        )
        for (let round = 0; round < BULK_ROUNDS; round++) {
          for (let i = 0; i < targets.length; i++) {
            const t = targets[(i + round) % targets.length]!
            const before = t.metrics ? await gateCpuSeconds(t.metrics) : 0
            const args = sshArgs({
              port: t.port,
              key: sshd.key,
              home,
              command: direction.upload ? 'cat > /dev/null' : `head -c ${BYTES} /dev/zero`,
            })
            const ms = await machineCpuDuring(machine[t.name]!, () =>
              direction.upload ? runSshUpload(args) : runSsh(args),
            )
            if (t.metrics) cpu[t.name]! += (await gateCpuSeconds(t.metrics)) - before
            rates[t.name]!.push(BYTES / 1024 ** 2 / (ms / 1000))
          }
        }
        const pairs = (name: string) => rates[name]!.map((r, i) => r / rates.direct![i]!)
        say(
          `${f(BYTES / 1024 ** 2)} MiB ${direction.title}, ${BULK_ROUNDS} rounds: gate / direct best ${ratio(best(rates.gate!), best(rates.direct!))}, median of rounds ${f(median(pairs('gate')), 2)}x; in-process gate / direct best ${ratio(best(rates['in-process']!), best(rates.direct!))}, median ${f(median(pairs('in-process')), 2)}x`,
        )
        say(
          `  MiB/s: ${Object.entries(rates)
            .map(([k, xs]) => `${k} ${xs.map((x) => f(x)).join(', ')}`)
            .join('; ')}`,
        )
        say(
          `  gate CPU per GiB relayed (process and its splice helpers): ${f(cpu.gate! / BULK_ROUNDS / (BYTES / 1024 ** 3), 2)} s; in-process gate ${f(cpu['in-process']! / BULK_ROUNDS / (BYTES / 1024 ** 3), 2)} s (ssh and sshd do the encryption)`,
        )
        say(
          `  ${relayBoundLine({ gate: machine.gate!, direct: machine.direct! }, (BULK_ROUNDS * BYTES) / 1024 ** 3, median(rates.direct!) / 1024)}`,
        )
      }
      say(
        `  load average after the transfers: ${loadavg()
          .map((x) => f(x, 1))
          .join(' ')}`,
      )
      say('')
    }

    say(`total bench time ${f((performance.now() - started) / 1000)} s`)
  } finally {
    await gate?.stop()
    await inProcess?.stop()
    idle.server.close()
    for (const s of idle.sockets) s.destroy()
    bare.server.close()
    await sshd.stop()
    work.remove()
  }
}

/** RSS of sshd's listener process, for scale. */
function sshdRss(dir: string): string {
  try {
    const pid = execFileSync('cat', [join(dir, 'sshd.pid')], { encoding: 'utf8' }).trim()
    const status = execFileSync('cat', [`/proc/${pid}/status`], { encoding: 'utf8' })
    const kb = /VmRSS:\s+(\d+)/.exec(status)?.[1]
    return kb ? `${f(Number(kb) / 1024, 1)} MiB (listener)` : 'n/a'
  } catch {
    return 'n/a'
  }
}

await main()
process.exit(0)
