/**
 * What SQLite's checkpoints cost a serving thread under steady writes: SQLite's default (the
 * commit that takes the log past 1,000 pages copies it and syncs, on the serving thread) against
 * the kit's `startBackgroundCheckpoints` (a worker thread copies; when writes outrun it and the
 * log passes its bound, the serving thread copies the rest between two transactions). The writer
 * commits transactions of 100 rows of 1 kB, letting the event loop turn between them, as a
 * server's group commit does; the log's bound is 16 MiB here (64 in the servers) so that a short
 * run crosses it several times.
 *
 * Figures, each variant in alternating rounds: wall time, the serving thread's CPU time, the
 * event loop's delay (p99, max: what every other request waits behind) and how long a
 * transaction waited for the connection (max).
 *
 *   npm run bench:checkpoints -w packages/kit
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { DatabaseSync } from 'node:sqlite'
import { ConnectionLock } from '../src/db/sqlite-adapter.ts'
import { startBackgroundCheckpoints } from '../src/db/sqlite-checkpoint.ts'

const TRANSACTIONS = Number(process.env.CHECKPOINT_BENCH_TRANSACTIONS ?? 1500)
const ROUNDS = Number(process.env.CHECKPOINT_BENCH_ROUNDS ?? 3)
const ROWS = 100
const payload = 'x'.repeat(1000)

async function run(variant: 'on commit' | 'worker') {
  const dir = mkdtempSync(join(tmpdir(), 'kit-bench-checkpoints-'))
  const path = join(dir, 'bench.db')
  const raw = new DatabaseSync(path)
  raw.exec('pragma journal_mode = wal')
  raw.exec('pragma synchronous = normal')
  raw.exec('create table t (id integer primary key, v text)')
  const lock = new ConnectionLock()
  const background =
    variant === 'worker'
      ? await startBackgroundCheckpoints(path, raw, lock, { maxLogBytes: 16 * 1024 * 1024 })
      : undefined
  const insert = raw.prepare('insert into t (v) values (?)')
  const loop = monitorEventLoopDelay({ resolution: 1 })
  let waitMax = 0
  loop.enable()
  const cpu0 = process.threadCpuUsage()
  const t0 = performance.now()
  for (let i = 0; i < TRANSACTIONS; i++) {
    const w0 = performance.now()
    await lock.acquire()
    waitMax = Math.max(waitMax, performance.now() - w0)
    raw.exec('begin immediate')
    for (let j = 0; j < ROWS; j++) insert.run(payload)
    raw.exec('commit')
    lock.release()
    await new Promise((r) => setImmediate(r))
  }
  const wallMs = performance.now() - t0
  const cpu = process.threadCpuUsage(cpu0)
  loop.disable()
  await background?.stop()
  raw.close()
  rmSync(dir, { recursive: true, force: true })
  return {
    wallMs,
    cpuMs: (cpu.user + cpu.system) / 1000,
    loopP99: loop.percentile(99) / 1e6,
    loopMax: loop.max / 1e6,
    waitMax,
  }
}

console.log(
  `machine: ${cpus()[0]?.model.trim()}, ${cpus().length} cores; node ${process.version}; load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
)
console.log(`${TRANSACTIONS} transactions of ${ROWS} rows of 1 kB (${((TRANSACTIONS * ROWS) / 1000).toFixed(0)} MB)`)
console.log('round  checkpoints   wall ms  thread CPU ms  loop delay p99 / max ms  connection wait max ms')
for (let round = 1; round <= ROUNDS; round++) {
  for (const variant of ['on commit', 'worker'] as const) {
    const r = await run(variant)
    console.log(
      `${String(round).padEnd(7)}${variant.padEnd(14)}${r.wallMs.toFixed(0).padStart(7)}${r.cpuMs.toFixed(0).padStart(15)}${`${r.loopP99.toFixed(1)} / ${r.loopMax.toFixed(1)}`.padStart(25)}${r.waitMax.toFixed(1).padStart(24)}`,
    )
  }
}
