/**
 * The edge nodes' control-plane client against a real HTTPS server (test CA): configuration
 * mistakes are TypeErrors before any request; redirects are refused; the control plane's error
 * code and status reach the caller; one page of observations, a policy pull and an SMTP report
 * go to the right paths with the instance in the query and the bearer token.
 */
import assert from 'node:assert/strict'
import { X509Certificate } from 'node:crypto'
import { once } from 'node:events'
import { copyFileSync } from 'node:fs'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { createServer } from 'node:https'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import type { TLSSocket } from 'node:tls'
import { createTestCa, type TestCa, tempDir } from '@gatehouse/testkit'
import {
  ControlPlaneClient,
  type ControlPlaneError,
  type ControlPlaneTarget,
  checkControlPlaneTarget,
  credentialReloader,
} from '../src/control-plane-client.ts'

let ca: TestCa
let base: string
const seen: Array<{ method: string; url: string; auth: string | undefined; body: string }> = []
let answer: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end('{}')
let server: ReturnType<typeof createServer>

before(async () => {
  ca = createTestCa()
  const cert = ca.issueServer()
  server = createServer({ cert: cert.cert, key: cert.key }, (req, res) => {
    let body = ''
    req.on('data', (c) => (body += c))
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, auth: req.headers.authorization, body })
      answer(req, res)
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  base = `https://127.0.0.1:${(server.address() as { port: number }).port}`
})
after(() => {
  server?.close()
  ca?.remove()
})

const target = (over: Partial<ControlPlaneTarget> = {}): ControlPlaneTarget => ({
  url: base,
  instanceId: 'gate-1',
  auth: { kind: 'token', token: 't0k', ca: ca.caPath },
  ...over,
})

test('configuration mistakes are TypeErrors naming the key', () => {
  assert.throws(() => checkControlPlaneTarget(target({ url: 'http://cp.example' })), /must use https/)
  assert.throws(() => checkControlPlaneTarget(target({ url: 'https://u:p@cp.example' })), /plain base URL/)
  assert.throws(() => checkControlPlaneTarget(target({ instanceId: '' })), /instance_id is required/)
  assert.throws(
    () => checkControlPlaneTarget(target({ auth: { kind: 'mtls', clientCert: 'c', clientKey: 'k', ca: '' } })),
    /mutual TLS needs/,
  )
  assert.throws(
    () => new ControlPlaneClient(target({ auth: { kind: 'token', token: 'x', ca: '/nonexistent' } })),
    /ca \/nonexistent cannot be read/,
  )
})

test('requests carry the instance and the token; answers and refusals come back coded', async () => {
  const client = new ControlPlaneClient(target())
  try {
    answer = (_req, res) => res.end(JSON.stringify({ accepted: 1 }))
    assert.deepEqual(await client.uploadObservations([]), { accepted: 1 })
    assert.deepEqual(seen.at(-1), {
      method: 'POST',
      url: '/v1/observations/batch?instance_id=gate-1',
      auth: 'Bearer t0k',
      body: '{"instance_id":"gate-1","observations":[]}',
    })
    answer = (_req, res) =>
      res.end(JSON.stringify({ cursor: '2026-11-25T10:00:00.000000Z', decisions: [], more: false }))
    const policy = await client.policy('2026-11-25T09:00:00.000Z')
    assert.equal(policy.cursor, '2026-11-25T10:00:00.000000Z')
    assert.equal(seen.at(-1)!.url, '/v1/policy?instance_id=gate-1&since=2026-11-25T09%3A00%3A00.000Z')
    answer = (_req, res) => res.end('{"decisions": "not a list"}')
    await assert.rejects(client.policy(undefined), (e: ControlPlaneError) => e.code === 'bad_response')
    answer = (_req, res) => {
      res.statusCode = 409
      res.end(JSON.stringify({ error: { code: 'smtp_report_stale', message: 'older generation' } }))
    }
    const report = {
      namespace: 'n',
      listener: '0.0.0.0:25',
      coverage: { from: '2026-11-25T09:00:00.000Z', to: '2026-11-25T10:00:00.000Z' },
      generated_at: '2026-11-25T10:00:01.000Z',
      replay_id: 'abcdefghijklmnopqrstuvwxyz',
      counts: {},
      evidence: [],
    }
    await assert.rejects(
      client.sendSmtpReport(report),
      (e: ControlPlaneError) => e.status === 409 && e.code === 'smtp_report_stale',
    )
    assert.equal(JSON.parse(seen.at(-1)!.body).instance_id, 'gate-1')
    answer = (_req, res) => {
      res.statusCode = 307
      res.setHeader('location', `${base}/elsewhere`)
      res.end()
    }
    await assert.rejects(client.sendSignals([], 1), (e: ControlPlaneError) => e.code === 'redirect_refused')
  } finally {
    await client.close()
  }
})

test('reloadCredentials: the next requests present the renewed client certificate; a mismatched key changes nothing', async (t) => {
  const seenCerts: string[] = []
  const mtls = createServer(
    {
      ...(({ cert, key }) => ({ cert, key }))(ca.issueServer()),
      ca: ca.ca,
      requestCert: true,
      rejectUnauthorized: true,
    },
    (req, res) => {
      seenCerts.push((req.socket as TLSSocket).getPeerX509Certificate()!.fingerprint256)
      res.end(JSON.stringify({ cursor: '2026-11-30T10:00:00.000000Z', decisions: [], more: false }))
    },
  )
  mtls.listen(0, '127.0.0.1')
  await once(mtls, 'listening')
  t.after(() => mtls.close())
  const dir = tempDir('kit-cp-reload-')
  t.after(() => dir.remove())
  const first = ca.issueClient('gate-1')
  const certPath = join(dir.path, 'client.crt')
  const keyPath = join(dir.path, 'client.key')
  copyFileSync(first.certPath, certPath)
  copyFileSync(first.keyPath, keyPath)
  const client = new ControlPlaneClient({
    url: `https://127.0.0.1:${(mtls.address() as { port: number }).port}`,
    instanceId: 'gate-1',
    auth: { kind: 'mtls', clientCert: certPath, clientKey: keyPath, ca: ca.caPath },
  })
  t.after(() => client.close())
  const fingerprint = (cert: Buffer) => new X509Certificate(cert).fingerprint256
  assert.equal(client.hasCredentialFiles, true)
  await client.policy(undefined)
  assert.equal(seenCerts.at(-1), fingerprint(first.cert))

  const renewed = ca.issueClient('gate-1')
  copyFileSync(renewed.certPath, certPath)
  copyFileSync(renewed.keyPath, keyPath)
  await client.policy(undefined)
  assert.equal(seenCerts.at(-1), fingerprint(first.cert), 'nothing changes before the reload')
  assert.deepEqual(client.reloadCredentials(), { validTo: new X509Certificate(renewed.cert).validTo })
  await client.policy(undefined)
  assert.equal(seenCerts.at(-1), fingerprint(renewed.cert))

  // Half a renewal: a new certificate beside the old key.
  copyFileSync(ca.issueClient('gate-1').certPath, certPath)
  assert.throws(() => client.reloadCredentials(), /key values mismatch/)
  await client.policy(undefined)
  assert.equal(seenCerts.at(-1), fingerprint(renewed.cert), 'the previous credentials stay in use')
  assert.equal(new ControlPlaneClient(target()).hasCredentialFiles, true, 'a token with a CA file')
  const bare = new ControlPlaneClient(target({ auth: { kind: 'token', token: 't' } }))
  assert.equal(bare.hasCredentialFiles, false)
  await bare.close()
})

test('a token read again replaces the one in use for the next requests; a bad one or an mTLS client changes nothing', async () => {
  const client = new ControlPlaneClient(target())
  try {
    answer = (_req, res) => res.end('{"decisions":[],"next_cursor":"c1","resync":false}')
    assert.deepEqual(client.reloadCredentials('t0k'), { token: 'unchanged' })
    assert.deepEqual(client.reloadCredentials('rotated'), { token: 'changed' })
    await client.policy(undefined).catch(() => {})
    assert.equal(seen.at(-1)?.auth, 'Bearer rotated')
    assert.throws(() => client.reloadCredentials('two words'), /white space or control characters/)
    assert.throws(() => client.reloadCredentials(''), /empty/)
    await client.policy(undefined).catch(() => {})
    assert.equal(seen.at(-1)?.auth, 'Bearer rotated', 'the refused token is not used')
  } finally {
    await client.close()
  }
  const first = ca.issueClient('gate-1')
  const mtls = new ControlPlaneClient(
    target({ auth: { kind: 'mtls', clientCert: first.certPath, clientKey: first.keyPath, ca: ca.caPath } }),
  )
  assert.throws(() => mtls.reloadCredentials('t'), /mutual TLS, not a token/)
  await mtls.close()
})

test('the SIGHUP reloader says what was read: a certificate and its expiry, a CA alone, a token, nothing, or why not', async () => {
  const lines: Array<[string, Record<string, unknown>, string?]> = []
  const logger = {
    info: (a: Record<string, unknown> | string, b?: string) =>
      lines.push(typeof a === 'string' ? ['info', {}, a] : ['info', a, b]),
    error: (a: Record<string, unknown> | string, b?: string) =>
      lines.push(typeof a === 'string' ? ['error', {}, a] : ['error', a, b]),
  }
  await credentialReloader(logger as never, () => ({ validTo: 'Dec  3 08:00:00 2027 GMT' }))()
  await credentialReloader(logger as never, () => ({}))()
  await credentialReloader(logger as never, () => ({ token: 'changed' }))()
  await credentialReloader(logger as never, () => ({ token: 'unchanged' }))()
  await credentialReloader(logger as never, () => undefined)()
  await credentialReloader(logger as never, () => {
    throw new Error('key does not match')
  })()
  assert.deepEqual(lines, [
    ['info', { valid_to: 'Dec  3 08:00:00 2027 GMT' }, 'control-plane credentials reloaded'],
    // A token with a CA: no "valid_to: null" suggesting a certificate that has no expiry.
    ['info', {}, 'control-plane CA reloaded; the bearer token is read at start only (restart to change it)'],
    ['info', {}, 'control-plane token reloaded: the next sync uses the new one'],
    ['info', {}, 'control-plane token unchanged (its source holds the token in use)'],
    ['info', {}, 'SIGHUP changes nothing: no control-plane credential files; other settings are read at start'],
    [
      'error',
      { reason: 'key does not match' },
      'control-plane credentials not reloaded; the previous ones stay in use',
    ],
  ])
})
