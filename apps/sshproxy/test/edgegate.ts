/**
 * Test support: a REAL edgegate control plane for the gate's tests. edgegate is another app,
 * so it is started from its entry file as a child process and seeded only through its CLI
 * (a child process) and its HTTPS admin API; nothing of edgegate is ever imported.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { createTlsAgent, requestNoRedirect } from '@gatehouse/kit'
import { type Child, freePort, type IssuedCert, startChild, type TestCa, tempDir } from '@gatehouse/testkit'
import { NODE } from './helpers.ts'

/** edgegate's entry file: a path handed to the child process, never an import. */
export const EDGEGATE = join(import.meta.dirname, '..', '..', 'edgegate', 'src', 'main.ts')

export interface Edgegate {
  base: string
  port: number
  database: string
  child: Child
  /** Verifies this process's certificate (with its server name, if any). */
  agent: ReturnType<typeof createTlsAgent>
  stop(): Promise<void>
}

export interface StartEdgegateOptions {
  /** Extra `edgegate serve` flags. */
  extra?: string[]
  /** Share another process's database (default: a fresh SQLite file). */
  database?: string
  /** Server certificate (default: one naming 127.0.0.1). */
  server?: IssuedCert
  /** Name to verify when the server certificate does not name 127.0.0.1. */
  serverName?: string
  /** Listen here (a restart where a gate's config already points); default a free port. */
  port?: number
}

/** Run `edgegate ARGS` against `database` as a child process. */
export function edgegateCli(
  database: string,
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(NODE, [EDGEGATE, ...args], {
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

/** Run an edgegate CLI command that prints a token (`admin add`, `node add`); returns the token. */
export async function edgegateToken(database: string, args: string[]): Promise<string> {
  const r = await edgegateCli(database, args)
  const token = /token: (\S+)/.exec(r.stdout)?.[1]
  assert.ok(r.code === 0 && token, `edgegate ${args.join(' ')}: ${r.stderr}`)
  return token
}

/** Start `edgegate serve` over HTTPS (certificates from `ca`) on a free port; ready when /healthz answers. */
export async function startEdgegate(ca: TestCa, o: StartEdgegateOptions = {}): Promise<Edgegate> {
  const dir = tempDir('sshproxy-edgegate-')
  const database = o.database ?? `sqlite:${join(dir.path, 'edgegate.db')}`
  const port = o.port ?? (await freePort())
  const base = `https://127.0.0.1:${port}`
  const server = o.server ?? ca.issueServer()
  const agent = createTlsAgent({ ca: ca.ca, ...(o.serverName ? { servername: o.serverName } : {}) })
  try {
    const child = await startChild({
      name: 'edgegate',
      command: NODE,
      args: [
        EDGEGATE,
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
      probe: async () =>
        (await requestNoRedirect(`${base}/healthz`, { dispatcher: agent, timeoutMs: 2000 })).status === 200,
      timeoutMs: 30_000,
    })
    return {
      base,
      port,
      database,
      child,
      agent,
      async stop() {
        await child.stop()
        await agent.close()
        dir.remove()
      },
    }
  } catch (err) {
    await agent.close()
    throw err
  }
}

/** One admin API call over HTTPS: GET, or PUT with a JSON body. */
export async function api(eg: Edgegate, token: string, path: string, body?: unknown) {
  const res = await requestNoRedirect(`${eg.base}${path}`, {
    method: body === undefined ? 'GET' : 'PUT',
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    dispatcher: eg.agent,
    accept: () => true,
  })
  // biome-ignore lint/suspicious/noExplicitAny: response bodies checked by the assertions
  return { status: res.status, body: res.json() as any }
}

/** The fingerprints the control plane holds for `instance` (admin API). */
export async function controlPlaneFingerprints(eg: Edgegate, admin: string, instance: string) {
  const res = await api(eg, admin, `/api/fingerprints?instance_id=${instance}&limit=1000`)
  assert.equal(res.status, 200, JSON.stringify(res.body))
  return res.body.fingerprints as Array<{
    fingerprint: string
    count: number
    ips: string[]
    reported_status: string
    metadata: Record<string, unknown>
  }>
}
