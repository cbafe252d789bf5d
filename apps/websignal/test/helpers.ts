/** Test support: configs, agents on a real Redis, log lines. */
import { appendFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createLogger, type Logger } from '@gatehouse/kit'
import { type Child, startChild, tempDir } from '@gatehouse/testkit'
import { Agent } from '../src/agent.ts'
import { type Config, loadWebsignalConfig } from '../src/config.ts'
import { agentMetrics } from '../src/metrics.ts'
import { Store } from '../src/store/store.ts'

export const MAIN = join(import.meta.dirname, '..', 'src', 'main.ts')

let seq = 0

/** A config file in a temp folder; returns its path and the loaded config. */
export function writeConfig(obj: Record<string, unknown>, env: Record<string, string> = {}) {
  const dir = tempDir('websignal-cfg-')
  const path = join(dir.path, 'websignal.json')
  writeFileSync(path, JSON.stringify({ state_dir: join(dir.path, 'state'), ...obj }))
  return { dir, path, load: () => loadWebsignalConfig(path, env) }
}

/** A combined-format line at a time (ms). */
export function line(ip: string, target: string, status: number, timeMs: number, ua = 'Mozilla/5.0 test'): string {
  const d = new Date(timeMs)
  const mon = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'][d.getUTCMonth()]
  const p = (n: number) => String(n).padStart(2, '0')
  const t = `${p(d.getUTCDate())}/${mon}/${d.getUTCFullYear()}:${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())} +0000`
  return `${ip} - - [${t}] "GET ${target} HTTP/1.1" ${status} 100 "-" "${ua}"\n`
}

export interface TestAgent {
  agent: Agent
  store: Store
  config: Config
  metrics: ReturnType<typeof agentMetrics>
  log: string
  append(text: string): void
  /** Read what is new and flush it (one tick). */
  tick(): Promise<void>
  close(): Promise<void>
}

/** An Agent on a real Redis (not started: tests drive ticks). `overrides` merge into the config file. */
export async function testAgent(
  redisUrl: string,
  overrides: Record<string, unknown> = {},
  logPath?: string,
  now?: () => number,
  logger: Logger = createLogger({ name: 'websignal', level: 'silent' }),
) {
  const dir = tempDir('websignal-agent-')
  const log = logPath ?? join(dir.path, `access${++seq}.log`)
  writeFileSync(log, '', { flag: 'a' })
  const { path } = writeConfig({
    store: { url: redisUrl, namespace: `t${process.pid}x${seq}` },
    inputs: [{ path: log, format: 'combined', site: 'main', host: 'www.example.org' }],
    window: '1h',
    log_level: 'silent',
    ...overrides,
  })
  const config = loadWebsignalConfig(path, {})
  const store = new Store(config.store)
  await store.open()
  const metrics = agentMetrics()
  const agent = new Agent({
    config,
    store,
    metrics,
    logger,
    ...(now ? { now } : {}),
  })
  await agent.pollOnce()
  const t: TestAgent = {
    agent,
    store,
    config,
    metrics,
    log,
    append: (text) => appendFileSync(log, text),
    async tick() {
      await agent.pollOnce()
      await agent.flush()
    },
    async close() {
      await agent.stop()
      await store.close()
      dir.remove()
    },
  }
  return t
}

export { waitFor } from '@gatehouse/testkit'

/** One unlabelled series of a running agent's `/metrics` (NaN when absent). */
export async function metric(port: number, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text)
  return m ? Number(m[1]) : Number.NaN
}

/**
 * A Redis of the test's own on `port` (testkit's shared one cannot be stopped, restarted or
 * filled by one test): no persistence, its files in `dir`.
 */
export function redisOn(port: number, dir: string): Promise<Child> {
  return startChild({
    name: 'redis-server',
    command: '/usr/bin/redis-server',
    args: ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
    logFile: join(dir, 'redis.log'),
    readyLine: /Ready to accept connections/,
  })
}
