/**
 * Test helpers: the gate built in-process on a fresh SQLite file, the real `tlsgate` binary
 * as a child process, raw backends that record what reaches them, and curl as a real client.
 */
import { execFile } from 'node:child_process'
import { once } from 'node:events'
import { createServer, type Server, type Socket } from 'node:net'
import { join } from 'node:path'
import { createLogger } from '@gatehouse/kit/logger.ts'
import { tempDir, waitFor } from '@gatehouse/testkit'
import { loadServeConfig, type ServeConfig } from '../src/config.ts'
import { openStore, type Store } from '../src/db/index.ts'
import { type FingerprintEntry, listEntries } from '../src/fingerprints/store.ts'
import { buildServer, type Gate } from '../src/server.ts'

export const MAIN = join(import.meta.dirname, '..', 'src', 'main.ts')

export interface CliResult {
  code: number
  stdout: string
  stderr: string
}

/** Run `tlsgate ARGS` as a child process. */
export function cli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [MAIN, ...args],
      { env: { ...process.env, ...env }, timeout: 60_000 },
      (err, stdout, stderr) => {
        const code = err ? ((err as { code?: number }).code ?? 1) : 0
        resolve({ code: typeof code === 'number' ? code : 1, stdout, stderr })
      },
    )
  })
}

export { waitFor }

export interface TestGate {
  gate: Gate
  store: Store
  config: ServeConfig
  port: number
  dbPath: string
  logs: string[]
  entries(): Promise<FingerprintEntry[]>
  /** The entries once at least one is stored. */
  seen(): Promise<FingerprintEntry[]>
  metric(name: string, labels?: Record<string, string>): Promise<number>
  stop(): Promise<void>
}

/** A gate with one route to `backendPort` (flags as on the command line, e.g. `{ 'enforce-unknown': true }`). */
export async function startGate(
  backendPort: number,
  flags: Record<string, unknown> = {},
  mode: 'tls' | 'smtp' = 'tls',
  /** Where the gate's database goes (default: a folder of its own). */
  dbAt?: string,
) {
  const dir = tempDir('tlsgate-test-')
  const dbPath = dbAt ?? join(dir.path, 'tlsgate.db')
  const config = loadServeConfig({
    flags: { route: [`${mode === 'smtp' ? 'smtp:' : ''}127.0.0.1:0=127.0.0.1:${backendPort}`], db: dbPath, ...flags },
    env: {},
    fileExists: () => false,
  })
  const logs: string[] = []
  const logger = createLogger({
    name: 'tlsgate-test',
    level: 'debug',
    destination: { write: (line: string) => void logs.push(line) } as never,
  })
  const store = await openStore(dbPath)
  const gate = await buildServer(config, { store, logger, flushIntervalMs: 20 })
  await gate.start()
  const port = gate.addresses()[0]!.port
  const t: TestGate = {
    gate,
    store,
    config,
    port,
    dbPath,
    logs,
    async entries() {
      await gate.flush()
      return listEntries(store.db)
    },
    async seen() {
      return waitFor('a stored entry', async () => {
        const all = await t.entries()
        return all.length > 0 ? all : undefined
      })
    },
    async metric(name, labels = {}) {
      const m = await gate.metrics.registry.getSingleMetric(`tlsgate_${name}`)?.get()
      const v = m?.values.find((x) => Object.entries(labels).every(([k, val]) => x.labels[k] === val))
      return v?.value ?? 0
    },
    async stop() {
      await gate.stop(0)
      await store.close()
      dir.remove()
    },
  }
  return t
}

/** A TCP backend that records the bytes each connection sent before it closed (or `untilBytes`). */
export async function recordingBackend(): Promise<{
  port: number
  connections: Buffer[][]
  server: Server
  received(i: number): Buffer
  close(): Promise<void>
}> {
  const connections: Buffer[][] = []
  const sockets = new Set<Socket>()
  const server = createServer((s) => {
    const chunks: Buffer[] = []
    connections.push(chunks)
    sockets.add(s)
    s.on('data', (d) => chunks.push(d))
    s.on('error', () => {})
    s.on('close', () => sockets.delete(s))
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return {
    port: (server.address() as { port: number }).port,
    connections,
    server,
    received: (i) => Buffer.concat(connections[i] ?? []),
    async close() {
      for (const s of sockets) s.destroy()
      server.close()
    },
  }
}

/** `curl` against the gate, for `name` resolved to 127.0.0.1; resolves with exit code, body and stderr. */
export function curl(
  port: number,
  options: { path?: string; ca?: string; name?: string; iface?: string } = {},
): Promise<CliResult> {
  const name = options.name ?? 'localhost'
  const args = ['-sS', '--max-time', '15', '--resolve', `${name}:${port}:127.0.0.1`]
  if (options.ca) args.push('--cacert', options.ca)
  else args.push('-k')
  if (options.iface) args.push('--interface', options.iface)
  args.push(`https://${name}:${port}${options.path ?? '/'}`)
  return new Promise((resolve) => {
    execFile('/usr/bin/curl', args, { timeout: 30_000 }, (err, stdout, stderr) => {
      const code = err ? ((err as { code?: number }).code ?? 1) : 0
      resolve({ code: typeof code === 'number' ? code : 1, stdout, stderr })
    })
  })
}
