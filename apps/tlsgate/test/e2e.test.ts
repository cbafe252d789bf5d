/**
 * End to end, every piece real and each its own process: nginx (PROXY protocol) behind
 * `tlsgate serve`, `websignal serve` reading nginx's access log (Redis store), and `edgegate
 * serve` correlating the scanner's signals with the gate's TLS sightings, its enforcement
 * controller blocking in canary mode for this gate only; the gate pulls the block and refuses
 * the scanner's next connection before nginx sees it.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import {
  type Child,
  createTestCa,
  freePort,
  type Nginx,
  type Redis,
  startChild,
  startNginx,
  startRedis,
  startTestEdgegate,
  type TestCa,
  type TestEdgegate,
  tempDir,
} from '@gatehouse/testkit'
import { cli, curl, MAIN, waitFor } from './helpers.ts'

const WEBSIGNAL = join(import.meta.dirname, '..', '..', 'websignal', 'src', 'main.ts')
const dir = tempDir('tlsgate-e2e-')
let ca: TestCa
let nginx: Nginx
let redis: Redis
let eg: TestEdgegate
let gate: Child
let agent: Child
let gatePort: number
let admin: string

function secret(name: string, value: string): string {
  const path = join(dir.path, name)
  writeFileSync(path, value, { mode: 0o600 })
  return path
}

before(async () => {
  ca = createTestCa()
  const site = ca.issueServer(['www.example.test'])
  nginx = await startNginx({ cert: site.cert, key: site.key, proxyProtocol: true })
  redis = await startRedis()
  eg = await startTestEdgegate(ca, {
    env: { EDGEGATE_WEB_SHADOW_REQUIRE_MULTI_SCOPE: 'false' },
    extra: [
      '--web-shadow-enabled',
      '--web-shadow-min-networks=1',
      '--web-shadow-min-signals=1',
      '--web-enforcement-mode=canary',
      '--web-enforcement-canary-nodes=tls-1',
      '--web-enforcement-interval=1s',
    ],
  })
  admin = await eg.token(['admin', 'add', 'admin'])
  const gateToken = await eg.token(['node', 'add', '--kind', 'tlsgate', 'tls-1'])
  const agentToken = await eg.token(['node', 'add', '--kind', 'websignal', 'web-1'])

  const gateConfig = join(dir.path, 'tlsgate.json')
  writeFileSync(
    gateConfig,
    JSON.stringify({
      control_plane: {
        url: eg.base,
        instance_id: 'tls-1',
        token_file: secret('gate-token', gateToken),
        ca: ca.caPath,
        sync_interval: '1s',
      },
    }),
  )
  gatePort = await freePort()
  gate = await startChild({
    name: 'tlsgate',
    command: process.execPath,
    args: [
      MAIN,
      'serve',
      '--route',
      `127.0.0.1:${gatePort}=127.0.0.1:${nginx.port}`,
      '--proxy-protocol',
      '--config',
      gateConfig,
      '--db',
      join(dir.path, 'tlsgate.db'),
    ],
    logFile: join(dir.path, 'tlsgate.log'),
    readyLine: /tlsgate ready/,
  })
  const agentConfig = join(dir.path, 'websignal.json')
  writeFileSync(
    agentConfig,
    JSON.stringify({
      listen: `127.0.0.1:${await freePort()}`,
      state_dir: join(dir.path, 'websignal-state'),
      inputs: [{ path: nginx.accessLog, format: 'combined', site: 'shop', host: 'www.example.test' }],
      window: '1m',
      poll_interval: '100ms',
      flush_interval: '200ms',
      store: { url: redis.url, namespace: `e2e${process.pid}` },
      control_plane: {
        url: eg.base,
        instance_id: 'web-1',
        token_file: secret('agent-token', agentToken),
        ca: ca.caPath,
        publish_interval: '200ms',
      },
    }),
  )
  agent = await startChild({
    name: 'websignal',
    command: process.execPath,
    args: [WEBSIGNAL, 'serve', '--config', agentConfig],
    logFile: join(dir.path, 'websignal.log'),
    readyLine: /ready|listening/i,
  })
})

after(async () => {
  await agent?.stop()
  await gate?.stop()
  await eg?.stop()
  await nginx?.stop()
  await redis?.stop()
  ca?.remove()
  dir.remove()
})

test('a scanner seen by nginx and websignal is blocked by edgegate (canary) and refused by the gate', async () => {
  const scanner = { name: 'www.example.test', iface: '127.0.0.9' }
  for (const path of ['/.env', '/.git/config', '/wp-login.php', '/.aws/credentials']) {
    const r = await curl(gatePort, { ...scanner, path })
    assert.equal(r.code, 0, r.stderr) // 404s: the site answers, the log records them
  }
  // nginx logged the scanner's real address (PROXY v2 from the gate).
  assert.match(readFileSync(nginx.accessLog, 'utf8'), /^127\.0\.0\.9 - - .*"GET \/\.env HTTP\/1\.1" 404/m)

  // edgegate correlates the signal with the sighting, and the canary controller blocks it.
  const candidate = await waitFor(
    'the web candidate',
    async () => {
      const r = await eg.call('/api/web-candidates', { token: admin })
      return r.body.candidates?.find(
        (c: { gate?: string; instance_id?: string }) => (c.instance_id ?? c.gate) === 'tls-1',
      )
    },
    60_000,
  )
  const report = await eg.call('/api/web-candidates', { token: admin })
  assert.equal(report.body.enforcement_mode, 'canary')
  const db = join(dir.path, 'tlsgate.db')
  const blocked = await waitFor(
    'the automated block at the gate',
    async () => {
      const r = await cli(['list', '--json', '--db', db])
      const rows = JSON.parse(r.stdout || '[]') as Array<{
        fingerprint: string
        verdict: string
        expires_at: string | null
      }>
      return rows.find((e) => e.fingerprint === candidate.fingerprint && e.verdict === 'blocked')
    },
    60_000,
  )
  assert.ok(blocked.fingerprint.startsWith('t13d'))
  // The block's expiry came with it: past it the gate lets the client in even without the control plane.
  assert.ok(blocked.expires_at !== null && Date.parse(blocked.expires_at) > Date.now(), String(blocked.expires_at))

  // The next connection with that fingerprint is refused before nginx sees it.
  const linesBefore = readFileSync(nginx.accessLog, 'utf8').split('\n').length
  const refused = await curl(gatePort, { ...scanner, path: '/' })
  assert.notEqual(refused.code, 0)
  assert.match(refused.stderr, /access denied|alert/i)
  assert.equal(readFileSync(nginx.accessLog, 'utf8').split('\n').length, linesBefore, 'nginx saw nothing')
  // The block is the fingerprint's (curl's), on this gate: another TLS client still reaches the site.
  const other = await opensslGet(gatePort)
  assert.match(other, /HTTP\/1\.1 200 OK/)
})

/** GET / through the gate with `openssl s_client` (a client with another JA4 than curl). */
function opensslGet(port: number): Promise<string> {
  return new Promise((resolve) => {
    const child = spawn('/usr/bin/openssl', [
      's_client',
      '-quiet',
      '-connect',
      `127.0.0.1:${port}`,
      '-servername',
      'www.example.test',
    ])
    let out = ''
    child.stdout.on('data', (d) => (out += d))
    child.stdin.on('error', () => {})
    child.stdin.write('GET / HTTP/1.1\r\nHost: www.example.test\r\nConnection: close\r\n\r\n')
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000)
    child.on('close', () => {
      clearTimeout(timer)
      resolve(out)
    })
  })
}
