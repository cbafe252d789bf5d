/**
 * Servers under test, each in its own process so the load generator does not share its
 * event loop: notify itself (src/main.ts) and the baseline (kit's bare JSON route).
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { join } from 'node:path'
import { freePort, processCpu } from '@gatehouse/testkit'

export interface Running {
  base: string
  /** CPU time the server process has used so far (user + system), in seconds (Linux /proc). */
  cpuSeconds(): number
  stop(): Promise<void>
}

/** Wait for the server's ready answer; a server that never gives it is stopped, not left running. */
async function waitReady(child: ChildProcess, url: string): Promise<void> {
  const deadline = Date.now() + 30_000
  let last = 'no answer'
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`)
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(5_000) })
      if (res.ok) return
      last = `${res.status} ${await res.text()}`
    } catch (err) {
      last = String(err) // not yet listening
    }
    await new Promise((r) => setTimeout(r, 50))
  }
  child.kill('SIGKILL')
  throw new Error(`${url} not ready in 30 s (last: ${last})`)
}

/** The profiling hook of docs/performance.md (`NODE_OPTIONS="--import …/start.mjs"`) reaches the servers too. */
const profiling = Object.fromEntries(
  Object.entries(process.env).filter(
    (e): e is [string, string] =>
      e[1] !== undefined && (e[0] === 'NODE_OPTIONS' || e[0].startsWith('GATEHOUSE_PROFILE_')),
  ),
)

async function run(script: string, args: string[], env: Record<string, string>, ready: string): Promise<Running> {
  const child = spawn(process.execPath, [script, ...args], {
    env: { PATH: process.env.PATH ?? '', ...profiling, ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  })
  const base = ready.replace(/\/[^/]*$/, '')
  await waitReady(child, ready)
  return {
    base,
    cpuSeconds: () => {
      const c = processCpu(child.pid!)
      return c.user + c.system
    },
    async stop() {
      if (child.exitCode !== null) return
      const exited = new Promise((r) => child.once('exit', r))
      child.kill('SIGTERM')
      await exited
    },
  }
}

export async function startBaseline(): Promise<Running> {
  const port = await freePort()
  return run(join(import.meta.dirname, 'baseline-server.ts'), [String(port)], {}, `http://127.0.0.1:${port}/healthz`)
}

/** Notify's entry point: this checkout's, or another's given by NOTIFY_BENCH_MAIN (an A/B against older code). */
export const NOTIFY_MAIN = process.env.NOTIFY_BENCH_MAIN ?? join(import.meta.dirname, '..', 'src', 'main.ts')

export async function startNotifyProcess(env: Record<string, string>): Promise<Running> {
  const port = await freePort()
  return run(
    NOTIFY_MAIN,
    // `serve` is the default command; named, so the profiling hook (which matches it) finds it.
    ['serve', '-listen', `127.0.0.1:${port}`],
    { NOTIFY_LOG_LEVEL: 'info', ...env },
    `http://127.0.0.1:${port}/readyz`,
  )
}
