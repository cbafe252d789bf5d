/**
 * A REAL edgegate control plane for the edge nodes' tests (tlsgate, and any gate or agent
 * that syncs with it). edgegate is an app of this repository, so it is started from its entry
 * file as a child process and seeded only through its CLI (a child process) and its HTTPS
 * API; nothing of edgegate is imported.
 */
import { spawn } from 'node:child_process'
import { request } from 'node:https'
import { join } from 'node:path'
import type { TestCa } from './ca.ts'
import { type Child, startChild } from './child.ts'
import { freePort, tempDir } from './env.ts'

/** edgegate's entry file: a path handed to the child process, never an import. */
export const EDGEGATE_MAIN = join(import.meta.dirname, '..', '..', '..', 'apps', 'edgegate', 'src', 'main.ts')

export interface TestEdgegate {
  base: string
  port: number
  /** `sqlite:<file>` (or what was passed). */
  database: string
  child: Child
  /** An HTTPS call verified with the test CA: GET, or `method` with a JSON body. */
  call(
    path: string,
    options?: { token?: string; method?: string; body?: unknown },
    // biome-ignore lint/suspicious/noExplicitAny: response bodies are checked by the tests' assertions
  ): Promise<{ status: number; body: any }>
  /** Run `edgegate ARGS` on this database. */
  cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }>
  /** Run a CLI command that prints `token: ...` (`admin add`, `node add`); returns the token. */
  token(args: string[]): Promise<string>
  stop(): Promise<void>
}

export interface TestEdgegateOptions {
  /** Extra `edgegate serve` flags. */
  extra?: string[]
  /** Shared database URL (default: a fresh SQLite file). */
  database?: string
  /** Extra environment of `edgegate serve` (e.g. `EDGEGATE_WEB_SHADOW_REQUIRE_MULTI_SCOPE=false`). */
  env?: Record<string, string>
}

function runCli(database: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [EDGEGATE_MAIN, ...args], {
      env: { ...process.env, EDGEGATE_DATABASE: database },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (c) => (stdout += c))
    child.stderr.on('data', (c) => (stderr += c))
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }))
  })
}

/**
 * Start `edgegate serve` over HTTPS (certificates from `ca`, which also verifies client
 * certificates) on a free port; ready when /healthz answers.
 *
 * @example const eg = await startTestEdgegate(ca); const admin = await eg.token(['admin', 'add', 'admin'])
 */
export async function startTestEdgegate(ca: TestCa, o: TestEdgegateOptions = {}): Promise<TestEdgegate> {
  const dir = tempDir('gatehouse-edgegate-')
  const database = o.database ?? `sqlite:${join(dir.path, 'edgegate.db')}`
  const port = await freePort()
  const base = `https://127.0.0.1:${port}`
  const server = ca.issueServer()
  const call: TestEdgegate['call'] = (path, options = {}) =>
    new Promise((resolve, reject) => {
      const body = options.body === undefined ? undefined : JSON.stringify(options.body)
      const req = request(
        `${base}${path}`,
        {
          method: options.method ?? (body === undefined ? 'GET' : 'PUT'),
          ca: ca.ca,
          headers: {
            ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          },
          timeout: 10_000,
        },
        (res) => {
          const chunks: Buffer[] = []
          res.on('data', (c) => chunks.push(c))
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8')
            let json: unknown = text
            try {
              json = JSON.parse(text)
            } catch {
              // not JSON (e.g. /metrics): the text
            }
            resolve({ status: res.statusCode ?? 0, body: json })
          })
        },
      )
      req.on('error', reject)
      req.on('timeout', () => req.destroy(new Error(`${path} timed out`)))
      req.end(body)
    })
  const child = await startChild({
    name: 'edgegate',
    command: process.execPath,
    env: { ...process.env, ...o.env },
    args: [
      EDGEGATE_MAIN,
      'serve',
      '--listen',
      `127.0.0.1:${port}`,
      '--database',
      database,
      '--tls-cert',
      server.certPath,
      '--tls-key',
      server.keyPath,
      '--client-ca',
      ca.caPath,
      '--log-level',
      'warn',
      ...(o.extra ?? []),
    ],
    logFile: join(dir.path, 'edgegate.log'),
    probe: async () => (await call('/healthz').catch(() => ({ status: 0 }))).status === 200,
    timeoutMs: 30_000,
  })
  return {
    base,
    port,
    database,
    child,
    call,
    cli: (args) => runCli(database, args),
    async token(args) {
      const r = await runCli(database, args)
      const token = /token: (\S+)/.exec(r.stdout)?.[1]
      if (r.code !== 0 || !token) throw new Error(`edgegate ${args.join(' ')}: ${r.stderr}`)
      return token
    },
    async stop() {
      await child.stop()
      dir.remove()
    },
  }
}
