/** Test support: real edgegate processes over HTTPS with a test CA, both databases. */
import { spawn } from 'node:child_process'
import { createServer } from 'node:http'
import { join } from 'node:path'
import { after } from 'node:test'
import { createTlsAgent, requestNoRedirect } from '@gatehouse/kit'
import {
  type Child,
  createTestCa,
  freePort,
  type Postgres,
  startChild,
  startPostgres,
  type TestCa,
  tempDir,
} from '@gatehouse/testkit'
import { insertAdmin } from '../src/admins/store.ts'
import { newToken } from '../src/auth/tokens.ts'
import { openEdgeDatabase } from '../src/db/open.ts'
import { addNode, type Credential } from '../src/nodes/service.ts'

export const APP = join(import.meta.dirname, '..')
export const MAIN = join(APP, 'src', 'main.ts')
export const NODE = process.execPath

export const DIALECTS = ['sqlite', 'postgres'] as const
export type Dialect = (typeof DIALECTS)[number]

let seq = 0
/** A fresh database URL of the dialect. */
export async function newDatabase(dialect: Dialect, pg: () => Promise<Postgres>): Promise<string> {
  if (dialect === 'postgres') return (await pg()).createDatabase()
  return `sqlite:${join(tempDir('edgegate-db-').path, `e${++seq}.db`)}`
}

/** One PostgreSQL server per test file, started on first use. */
export function lazyPostgres() {
  let started: Promise<Postgres> | undefined
  return {
    get: () => {
      started ??= startPostgres()
      return started
    },
    stop: async () => {
      if (started) await (await started).stop()
    },
  }
}

/** A test file's PostgreSQL (started on first use) and test CA, both cleaned up after the file. */
export function fileServices(): { pg: ReturnType<typeof lazyPostgres>; tls: Tls } {
  const pg = lazyPostgres()
  const tls = makeTls()
  after(async () => {
    await pg.stop()
    tls.ca.remove()
  })
  return { pg, tls }
}

/** A parsed response body: tests check its shape with assertions. */
// biome-ignore lint/suspicious/noExplicitAny: response bodies of many shapes, checked by the assertions
export type Json = any

export interface Edgegate {
  base: string
  port: number
  child: Child
  stop(): Promise<void>
}

export interface Tls {
  ca: TestCa
  server: ReturnType<TestCa['issueServer']>
}

export function makeTls(): Tls {
  const ca = createTestCa()
  return { ca, server: ca.issueServer() }
}

/** Start `edgegate serve` as a child process on a free port; ready when /healthz answers. */
export async function startEdgegate(
  database: string,
  tls: Tls,
  extra: string[] = [],
  env: NodeJS.ProcessEnv = {},
): Promise<Edgegate> {
  const port = await freePort()
  const base = `https://127.0.0.1:${port}`
  const agent = createTlsAgent({ ca: tls.ca.ca })
  const dir = tempDir('edgegate-log-')
  const child = await startChild({
    name: 'edgegate',
    command: NODE,
    args: [
      MAIN,
      'serve',
      '--listen',
      `127.0.0.1:${port}`,
      '--database',
      database,
      '--tls-cert',
      tls.server.certPath,
      '--tls-key',
      tls.server.keyPath,
      '--client-ca',
      tls.ca.caPath,
      '--log-level',
      'warn',
      ...extra,
    ],
    env: { ...process.env, ...env },
    logFile: join(dir.path, 'edgegate.log'),
    probe: async () =>
      (await requestNoRedirect(`${base}/healthz`, { dispatcher: agent, timeoutMs: 2000 })).status === 200,
    timeoutMs: 30_000,
  })
  return {
    base,
    port,
    child,
    async stop() {
      await child.stop()
      await agent.close()
    },
  }
}

export interface CallOptions {
  method?: 'GET' | 'POST' | 'PUT' | 'DELETE'
  token?: string
  body?: unknown
  raw?: string
  headers?: Record<string, string>
  cert?: { cert: Buffer; key: Buffer }
}

/** One HTTPS call; returns status and parsed JSON (or text). */
export async function call(tls: Tls, base: string, path: string, o: CallOptions = {}) {
  const agent = createTlsAgent({ ca: tls.ca.ca, ...(o.cert ? { cert: o.cert.cert, key: o.cert.key } : {}) })
  try {
    const headers: Record<string, string> = { ...o.headers }
    if (o.token) headers.authorization = `Bearer ${o.token}`
    let body: string | undefined
    if (o.raw !== undefined) body = o.raw
    else if (o.body !== undefined) body = JSON.stringify(o.body)
    if (body !== undefined) headers['content-type'] ??= 'application/json'
    const res = await requestNoRedirect(`${base}${path}`, {
      method: o.method ?? (body !== undefined ? 'POST' : 'GET'),
      headers,
      ...(body !== undefined ? { body } : {}),
      dispatcher: agent,
      accept: () => true,
      maxBytes: 64 * 1024 * 1024,
    })
    const text = res.body.toString('utf8')
    let json: Json
    try {
      json = JSON.parse(text)
    } catch {
      json = text
    }
    return { status: res.status, body: json, headers: res.headers }
  } finally {
    await agent.close()
  }
}

/** Register nodes and an admin directly in the database (the CLI has its own tests). */
export async function seed(
  database: string,
  nodes: Array<{ id: string; kind: string; credential?: Credential; active?: boolean }>,
): Promise<{ tokens: Record<string, string>; admin: string }> {
  const d = await openEdgeDatabase(database, 2)
  try {
    const tokens: Record<string, string> = {}
    for (const n of nodes) {
      const t = await addNode(d.db, n.id, n.kind, n.credential ?? { type: 'token' }, 'test')
      if (t) tokens[n.id] = t
      if (n.active === false)
        await d.db.updateTable('nodes').set({ active: 0 }).where('instance_id', '=', n.id).execute()
    }
    const admin = newToken('admin')
    await insertAdmin(d.db, `admin${++seq}`, admin.hash, Date.now(), null)
    return { tokens, admin: admin.token }
  } finally {
    await d.close()
  }
}

/** Run the CLI as a child process. */
export function cli(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(NODE, [MAIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (c) => (stdout += c))
    child.stderr.on('data', (c) => (stderr += c))
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }))
  })
}

export { waitFor } from '@gatehouse/testkit'

export const now = () => new Date().toISOString()

export function observation(fp: string, extra: Record<string, unknown> = {}) {
  const t = now()
  return {
    fingerprint: fp,
    status: 'unknown',
    first_seen: t,
    last_seen: t,
    ips: ['192.0.2.10'],
    ports: [22],
    sightings: [{ ip: '192.0.2.10', port: 22, last_seen: t }],
    count: 1,
    ...extra,
  }
}

export interface CaughtAlert {
  title: string
  priority: string
  tags: string
  body: string
}

/**
 * A loopback channel for `--alert-url` (ntfy-style posts) that keeps the alerts it accepts.
 * `answer` gives each post's status (default 200; only a 200 keeps the alert).
 */
export async function alertCatcher(options: { path?: string; answer?: () => number } = {}) {
  const received: CaughtAlert[] = []
  const server = createServer((req, res) => {
    let body = ''
    req.on('data', (c) => {
      body += c
    })
    req.on('end', () => {
      const status = options.answer?.() ?? 200
      if (status === 200) {
        const h = req.headers
        received.push({ title: String(h.title), priority: String(h.priority), tags: String(h.tags), body })
      }
      res.writeHead(status).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  return {
    url: `http://127.0.0.1:${port}${options.path ?? '/hooks/catcher'}`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}
