/**
 * A real edgegate for the wire tests, driven only through its CLI and HTTPS (apps never
 * import each other): `edgegate node add` / `admin add` on a fresh SQLite database, then
 * `edgegate serve` as a child process with a test CA.
 */
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { createTlsAgent, requestNoRedirect } from '@gatehouse/kit'
import { type Child, createTestCa, freePort, startChild, type TestCa, tempDir } from '@gatehouse/testkit'

const EDGEGATE = join(import.meta.dirname, '..', '..', 'edgegate', 'src', 'main.ts')

export interface TestEdgegate {
  base: string
  ca: TestCa
  nodeToken: string
  adminToken: string
  child: Child
  /** POST a raw signal batch as the node. */
  post(body: unknown): Promise<{ status: number; body: { error?: { code: string } } & Record<string, unknown> }>
  /** Event ids stored for the node (admin API). */
  eventIds(): Promise<string[]>
  /** `edgegate node add --kind websignal <id>`: another node, its token. */
  addNode(id: string): string
  /** `edgegate node rotate-token <id>`: the new token (the old one stops working). */
  rotateToken(id: string): string
  stop(): Promise<void>
}

function cli(database: string, args: string[]): string {
  const r = spawnSync(process.execPath, [EDGEGATE, ...args, '--database', database], {
    encoding: 'utf8',
  })
  if (r.status !== 0) throw new Error(`edgegate ${args.join(' ')}: ${r.stderr}`)
  return r.stdout
}

export async function startEdgegate(nodeId: string): Promise<TestEdgegate> {
  const dir = tempDir('websignal-edgegate-')
  const database = `sqlite:${join(dir.path, 'edgegate.db')}`
  const ca = createTestCa()
  const server = ca.issueServer()
  cli(database, ['migrate'])
  const nodeToken = /token: (\S+)/.exec(cli(database, ['node', 'add', '--kind', 'websignal', nodeId]))![1]!
  const adminToken = /token: (\S+)/.exec(cli(database, ['admin', 'add', 'tester']))?.[1]
  if (!adminToken) throw new Error('edgegate admin add printed no token')
  const port = await freePort()
  const base = `https://127.0.0.1:${port}`
  const agent = createTlsAgent({ ca: ca.ca })
  const child = await startChild({
    name: 'edgegate',
    command: process.execPath,
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
      '--log-level',
      'warn',
    ],
    logFile: join(dir.path, 'edgegate.log'),
    probe: async () =>
      (await requestNoRedirect(`${base}/healthz`, { dispatcher: agent, timeoutMs: 2000 })).status === 200,
    timeoutMs: 30_000,
  })
  const call = async (path: string, token: string, body?: unknown) => {
    const res = await requestNoRedirect(`${base}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      dispatcher: agent,
      accept: () => true,
    })
    return { status: res.status, body: res.json() as never }
  }
  return {
    base,
    ca,
    nodeToken,
    adminToken,
    child,
    post: (body) => call(`/v1/signals/batch?instance_id=${nodeId}`, nodeToken, body),
    async eventIds() {
      const r = await call('/api/signals?limit=1000', adminToken)
      return (r.body as { signals: Array<{ event_id: string }> }).signals.map((s) => s.event_id).sort()
    },
    addNode: (id) => /token: (\S+)/.exec(cli(database, ['node', 'add', '--kind', 'websignal', id]))![1]!,
    rotateToken: (id) => /token: (\S+)/.exec(cli(database, ['node', 'rotate-token', id]))![1]!,
    async stop() {
      await child.stop()
      await agent.close()
      ca.remove()
      dir.remove()
    },
  }
}
