/**
 * Sync with a REAL edgegate (child process, HTTPS): observations with their sni/ja3/ja4
 * metadata and IP/port sightings uploaded; a block made at the control plane pulled and
 * enforced on the next connection; trusted ranges from the policy bypassing a blocked
 * fingerprint; SMTP correlation reports stored, replayed idempotently, and a stale
 * generation's 409 handled.
 */
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { ControlPlaneClient } from '@gatehouse/kit/control-plane-client.ts'
import { createLogger } from '@gatehouse/kit/logger.ts'
import {
  createTestCa,
  type Nginx,
  startNginx,
  startTestEdgegate,
  type TestCa,
  type TestEdgegate,
  tempDir,
} from '@gatehouse/testkit'
import { parseRoute } from '../src/config.ts'
import { setVerdict } from '../src/fingerprints/store.ts'
import { SmtpReporter } from '../src/smtp/index.ts'
import { startGateSync } from '../src/sync/gate-sync.ts'
import { curl, startGate } from './helpers.ts'

let ca: TestCa
let eg: TestEdgegate
let nginx: Nginx
let admin: string
let nodeToken: string
const silent = createLogger({ name: 'tlsgate-sync-test', level: 'silent' })

before(async () => {
  ca = createTestCa()
  const server = ca.issueServer(['localhost', 'www.example.test'])
  ;[eg, nginx] = await Promise.all([startTestEdgegate(ca), startNginx({ cert: server.cert, key: server.key })])
  admin = await eg.token(['admin', 'add', 'admin'])
  nodeToken = await eg.token(['node', 'add', '--kind', 'tlsgate', 'tls-1'])
})
after(async () => {
  await eg?.stop()
  await nginx?.stop()
  ca?.remove()
})

const plane = () => ({
  url: eg.base,
  instanceId: 'tls-1',
  auth: { kind: 'token' as const, token: nodeToken, ca: ca.caPath },
  syncIntervalMs: 3_600_000,
})

test('sightings go up with sni/ja3/ja4; a block made at the control plane refuses the next connection', async (t) => {
  const g = await startGate(nginx.port)
  const sync = startGateSync({
    controlPlane: plane(),
    store: g.store,
    bypass: g.gate.bypass,
    logger: silent,
    metrics: g.gate.metrics,
  })
  t.after(async () => {
    await sync.stop()
    await g.stop()
  })
  assert.equal((await curl(g.port, { name: 'www.example.test' })).code, 0)
  const [local] = await g.seen()
  const up = await sync.syncNow()
  assert.equal(up.ok, true, up.error?.message)
  assert.equal(up.uploaded, 1)
  const held = await eg.call('/api/fingerprints?instance_id=tls-1&limit=100', { token: admin })
  assert.equal(held.status, 200)
  const fp = held.body.fingerprints.find((f: { fingerprint: string }) => f.fingerprint === local!.fingerprint)
  assert.ok(fp, 'the control plane holds the fingerprint')
  assert.equal(fp.reported_status, 'unknown')
  assert.equal(fp.metadata.sni, 'www.example.test')
  assert.equal(fp.metadata.ja4, local!.fingerprint)
  assert.match(fp.metadata.ja3, /^[0-9a-f]{32}$/)
  assert.deepEqual(fp.ips, ['127.0.0.1'])

  const put = await eg.call(`/api/decisions/tls-1/${local!.fingerprint}`, {
    token: admin,
    body: { status: 'blocked', label: 'scanner' },
  })
  assert.equal(put.status, 200, JSON.stringify(put.body))
  const pulled = await sync.syncNow()
  assert.equal(pulled.decisions, 1)
  const refused = await curl(g.port, { name: 'www.example.test' })
  assert.notEqual(refused.code, 0)
  const [after] = await g.entries()
  assert.deepEqual([after!.verdict, after!.label, after!.actor?.startsWith('admin')], ['blocked', 'scanner', true])
})

test('SMTP reports: stored, an exact replay is unchanged, a stale generation is dropped on 409', async () => {
  let clock = Date.parse('2026-11-25T10:30:00.000Z')
  const reporter = new SmtpReporter('mail.example', () => clock)
  const route = parseRoute('smtp:0.0.0.0:25=127.0.0.1:2525')
  reporter.record(route, { result: 'allowed', ip: '198.51.100.7', fingerprint: 't13d1516h2_8daaf6152771_d8a2da3f94cd' })
  reporter.record(route, {
    result: 'refused_blocked',
    ip: '203.0.113.9',
    fingerprint: 't12i0101cd_0f2cb44170f4_e3b0c44298fc',
  })
  reporter.record(route, { result: 'plaintext', ip: '198.51.100.8' })
  clock = Date.parse('2026-11-25T11:00:05.000Z')
  const [report] = reporter.cut(Date.parse('2026-11-25T11:00:00.000Z'))
  assert.deepEqual(report!.coverage, { from: '2026-11-25T10:00:00.000Z', to: '2026-11-25T11:00:00.000Z' })
  assert.deepEqual(report!.counts, { connections: 3, allowed: 1, refused_blocked: 1, plaintext: 1 })
  assert.equal(report!.evidence[0]!.kind, 'refused_blocked')
  assert.equal(report!.evidence[0]!.ip, '203.0.113.9')
  assert.equal(report!.evidence[1]!.ip, undefined, 'allowed clients are evidence without their address')

  const client = new ControlPlaneClient(plane())
  try {
    assert.deepEqual(await reporter.upload(client, silent), { sent: 1, stale: 0 })
    const stored = await eg.call('/api/smtp-reports', { token: admin })
    assert.equal(stored.status, 200)
    const r = stored.body.reports.find((x: { listener: string }) => x.listener === '0.0.0.0:25')
    assert.equal(r.replay_id, report!.replay_id)
    assert.equal(r.namespace, 'mail.example')
    // The same report again (a retry after a lost answer): unchanged.
    assert.deepEqual(await client.sendSmtpReport(report!), { result: 'unchanged' })
    // A different report generated earlier than the stored one: 409, dropped from the queue.
    reporter.record(route, {
      result: 'allowed',
      ip: '198.51.100.7',
      fingerprint: 't13d1516h2_8daaf6152771_d8a2da3f94cd',
    })
    clock = Date.parse('2026-11-25T10:59:00.000Z') // a clock that went backwards
    reporter.cut(Date.parse('2026-11-25T12:00:00.000Z'))
    assert.equal(reporter.queued.length, 1)
    assert.deepEqual(await reporter.upload(client, silent), { sent: 0, stale: 1 })
    assert.equal(reporter.queued.length, 0)
  } finally {
    await client.close()
  }
})

test('SMTP reports: a wrong token or an unreachable control plane keeps the report queued; it goes up later, once', async () => {
  let clock = Date.parse('2026-11-26T08:10:00.000Z')
  const reporter = new SmtpReporter('mail.example', () => clock)
  const route = parseRoute('smtp:0.0.0.0:587=127.0.0.1:2587')
  reporter.record(route, { result: 'plaintext', ip: '198.51.100.8' })
  clock = Date.parse('2026-11-26T09:00:01.000Z')
  const [report] = reporter.cut(Date.parse('2026-11-26T09:00:00.000Z'))
  const wrong = new ControlPlaneClient({ ...plane(), auth: { ...plane().auth, token: 'not-the-node-token' } })
  const away = new ControlPlaneClient({ ...plane(), url: 'https://127.0.0.1:9/' })
  const client = new ControlPlaneClient(plane())
  try {
    await assert.rejects(reporter.upload(wrong, silent))
    assert.equal(reporter.queued.length, 1, 'a refused credential is not a refusal of the report')
    await assert.rejects(reporter.upload(away, silent))
    assert.equal(reporter.queued.length, 1, 'an outage keeps it')
    assert.deepEqual(await reporter.upload(client, silent), { sent: 1, stale: 0 })
    assert.equal(reporter.queued.length, 0)
    const stored = await eg.call('/api/smtp-reports', { token: admin })
    const r = stored.body.reports.find((x: { listener: string }) => x.listener === '0.0.0.0:587')
    assert.equal(r.replay_id, report!.replay_id)
    assert.deepEqual(r.counts, { connections: 1, plaintext: 1 })
  } finally {
    await Promise.all([wrong.close(), away.close(), client.close()])
  }
})

test('trusted ranges from the policy let a blocked fingerprint through (bypassed), still observed', async (t) => {
  const dir = tempDir('tlsgate-ranges-')
  const file = join(dir.path, 'ranges.txt')
  writeFileSync(file, '# loopback clients are trusted\n127.0.0.0/8\n')
  const trusted = await startTestEdgegate(ca, { extra: ['--trusted-ranges-file', file] })
  const token = await trusted.token(['node', 'add', '--kind', 'tlsgate', 'tls-trusted'])
  const g = await startGate(nginx.port)
  let sync: ReturnType<typeof startGateSync> | undefined
  t.after(async () => {
    await sync?.stop()
    await g.stop()
    await trusted.stop()
    dir.remove()
  })
  assert.equal((await curl(g.port, { name: 'www.example.test' })).code, 0)
  const [seen] = await g.seen()
  await setVerdict(g.store.db, seen!.fingerprint, { verdict: 'blocked', actor: 'test', now: new Date().toISOString() })
  assert.notEqual((await curl(g.port, { name: 'www.example.test' })).code, 0, 'blocked before the ranges are pulled')
  sync = startGateSync({
    controlPlane: {
      ...plane(),
      url: trusted.base,
      instanceId: 'tls-trusted',
      auth: { kind: 'token', token, ca: ca.caPath },
    },
    store: g.store,
    bypass: g.gate.bypass,
    logger: silent,
    metrics: g.gate.metrics,
  })
  const pulled = await sync.syncNow()
  assert.equal(pulled.ok, true, pulled.error?.message)
  assert.equal((await curl(g.port, { name: 'www.example.test' })).code, 0, 'a trusted source skips the verdict')
  assert.equal(await g.metric('connection_results_total', { result: 'bypassed' }), 1)
  assert.equal(await g.metric('connection_results_total', { result: 'refused_blocked' }), 1)
  const [after] = await g.entries()
  assert.equal(after!.verdict, 'blocked', 'the bypass changes no verdict')
  assert.ok(after!.count >= 3, 'the bypassed connection is still observed')
})
