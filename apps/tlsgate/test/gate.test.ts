/**
 * The gate with real clients and a real web server: curl through the gate to nginx, verdicts
 * (blocked refused before the backend is contacted, unknown passes unless --enforce-unknown,
 * trusted ranges bypass), the ClientHello forwarded byte for byte, PROXY v2 to nginx, and a
 * bulk TLS session relayed intact both ways while the client reads slowly.
 */
import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { connect } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { createServer as createTlsServer, connect as tlsConnect } from 'node:tls'
import { createTestCa, type Nginx, startNginx, type TestCa } from '@gatehouse/testkit'
import { setVerdict } from '../src/fingerprints/store.ts'
import { proxyV2Header } from '../src/wire/proxy-protocol.ts'
import { curlHello } from './capture.ts'
import { curl, recordingBackend, startGate, waitFor } from './helpers.ts'

let ca: TestCa
let nginx: Nginx
let nginxPp: Nginx

before(async () => {
  ca = createTestCa()
  const server = ca.issueServer(['localhost', 'www.example.test', '127.0.0.1'])
  nginx = await startNginx({ cert: server.cert, key: server.key })
  nginxPp = await startNginx({ cert: server.cert, key: server.key, proxyProtocol: true })
})
after(async () => {
  await nginx?.stop()
  await nginxPp?.stop()
  ca?.remove()
})

const now = () => new Date().toISOString()

describe('curl through the gate to nginx', () => {
  test('an unknown client passes (web default), is recorded with SNI, JA3 and its sighting', async (t) => {
    const g = await startGate(nginx.port)
    t.after(() => g.stop())
    const r = await curl(g.port, { ca: ca.caPath, name: 'www.example.test' })
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stdout, /gatehouse test site/)
    const [e] = await waitFor('the entry', async () => (await g.entries()).filter((x) => x.count > 0))
    assert.match(e!.fingerprint, /^t13d\d{4}[a-z0-9]{2}_[0-9a-f]{12}_[0-9a-f]{12}$/)
    assert.equal(e!.metadata.sni, 'www.example.test')
    assert.match(e!.metadata.ja3!, /^[0-9a-f]{32}$/)
    assert.equal(e!.decided_at, null)
    assert.deepEqual(e!.ips, ['127.0.0.1'])
    assert.equal(e!.sightings.length, 1)
    assert.equal(await g.metric('connection_results_total', { result: 'allowed' }), 1)
    // nginx writes its access log line after the response has gone: wait for it.
    await waitFor('the access log line', () => /"GET \/ HTTP\/1\.1" 200/.test(readFileSync(nginx.accessLog, 'utf8')))
  })

  test('a blocked fingerprint is refused with an alert and the backend is never contacted', async (t) => {
    const backend = await recordingBackend()
    const g = await startGate(backend.port)
    t.after(async () => {
      await g.stop()
      await backend.close()
    })
    // Learn curl's fingerprint through the gate (its captured hello on a raw socket), then block it.
    const s = connect({ host: '127.0.0.1', port: g.port })
    s.write(await curlHello())
    const [e] = await g.seen()
    await waitFor('the backend connection', () => backend.connections.length === 1)
    s.destroy()
    assert.ok(await setVerdict(g.store.db, e!.fingerprint, { verdict: 'blocked', actor: 'test', now: now() }))
    const r = await curl(g.port)
    assert.notEqual(r.code, 0)
    assert.match(r.stderr, /access denied|alert/i)
    assert.equal(backend.connections.length, 1, 'no second backend connection')
    assert.equal(await g.metric('connection_results_total', { result: 'refused_blocked' }), 1)
    const [after] = await g.entries()
    assert.equal(after!.refused_count, 1)
  })

  test('--enforce-unknown refuses unknown and pending; approved passes; a trusted range bypasses', async (t) => {
    const g = await startGate(nginx.port, { 'enforce-unknown': true, 'trusted-range': ['127.0.0.2/32'] })
    t.after(() => g.stop())
    assert.notEqual((await curl(g.port)).code, 0)
    const [e] = await g.seen()
    assert.equal(await g.metric('connection_results_total', { result: 'refused_unknown' }), 1)
    await setVerdict(g.store.db, e!.fingerprint, { verdict: 'pending', actor: 'test', now: now() })
    assert.notEqual((await curl(g.port)).code, 0)
    assert.equal(await g.metric('connection_results_total', { result: 'refused_pending' }), 1)
    const trusted = await curl(g.port, { iface: '127.0.0.2' })
    assert.equal(trusted.code, 0, trusted.stderr)
    assert.equal(await g.metric('connection_results_total', { result: 'bypassed' }), 1)
    await setVerdict(g.store.db, e!.fingerprint, { verdict: 'approved', actor: 'test', now: now() })
    const ok = await curl(g.port)
    assert.equal(ok.code, 0, ok.stderr)
  })

  test('an expired automated block no longer refuses', async (t) => {
    const g = await startGate(nginx.port)
    t.after(() => g.stop())
    await curl(g.port)
    const [e] = await g.seen()
    await g.store.db
      .updateTable('fingerprints')
      .set({
        verdict: 'blocked',
        decided_at: now(),
        actor: 'web-controller',
        expires_at: new Date(Date.now() + 60_000).toISOString(),
      })
      .execute()
    assert.notEqual((await curl(g.port)).code, 0)
    await g.store.db
      .updateTable('fingerprints')
      .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
      .execute()
    assert.equal((await curl(g.port)).code, 0)
    assert.equal((await g.entries()).find((x) => x.fingerprint === e!.fingerprint)?.refused_count, 1)
    // An operator's block never expires: it clears the automated block's expiry.
    assert.ok(await setVerdict(g.store.db, e!.fingerprint, { verdict: 'blocked', actor: 'ops', now: now() }))
    const manual = (await g.entries()).find((x) => x.fingerprint === e!.fingerprint)
    assert.deepEqual([manual?.verdict, manual?.expires_at, manual?.actor], ['blocked', null, 'ops'])
    assert.notEqual((await curl(g.port)).code, 0)
  })

  test('a backend that refuses: the client is closed, BACKEND is logged, backend_error counted', async (t) => {
    const closed = await recordingBackend()
    await closed.close() // its port now refuses
    const g = await startGate(closed.port)
    t.after(() => g.stop())
    assert.notEqual((await curl(g.port)).code, 0)
    assert.equal(await g.metric('connection_results_total', { result: 'backend_error' }), 1)
    assert.ok(g.logs.some((l) => /BACKEND 127\.0\.0\.1:\d+ connection refused/.test(l)))
  })

  test('/metrics exposes the connection results; /readyz checks the database', async (t) => {
    const g = await startGate(nginx.port, { 'metrics-listen': '127.0.0.1:0' })
    t.after(() => g.stop())
    assert.equal((await curl(g.port)).code, 0)
    const at = g.gate.metricsAddress()!
    const text = await (await fetch(`http://127.0.0.1:${at.port}/metrics`)).text()
    assert.match(text, /tlsgate_connection_results_total\{route="127\.0\.0\.1:0",result="allowed"\} 1/)
    assert.match(text, /tlsgate_build_info/)
    assert.match(text, /^tlsgate_job_last_success_timestamp_seconds\{job="store_maintenance"\} \d/m)
    assert.doesNotMatch(text, /t13d/, 'fingerprints are never labels')
    assert.equal((await fetch(`http://127.0.0.1:${at.port}/readyz`)).ok, true)
  })

  test('--proxy-protocol: nginx logs the real client address, not the gate', async (t) => {
    const g = await startGate(nginxPp.port, { 'proxy-protocol': true })
    t.after(() => g.stop())
    const r = await curl(g.port, { iface: '127.0.0.3' })
    assert.equal(r.code, 0, r.stderr)
    const log = await waitFor('the access log line', () => readFileSync(nginxPp.accessLog, 'utf8'))
    assert.match(log, /^127\.0\.0\.3 - /m)
  })
})

describe('bytes reach the backend untouched', () => {
  test('the ClientHello is forwarded byte for byte, after the PROXY v2 header when enabled', async (t) => {
    const hello = await curlHello()
    const backend = await recordingBackend()
    const g = await startGate(backend.port, { 'proxy-protocol': true })
    t.after(async () => {
      await g.stop()
      await backend.close()
    })
    const s = connect({ host: '127.0.0.1', port: g.port, localAddress: '127.0.0.4' })
    await new Promise((r) => s.once('connect', r))
    s.write(hello)
    await waitFor('the backend bytes', () => backend.received(0).length >= hello.length + 28)
    const got = backend.received(0)
    const header = proxyV2Header({ ip: '127.0.0.4', port: s.localPort! }, { ip: '127.0.0.1', port: g.port })
    assert.deepEqual(got.subarray(0, header.length), header)
    assert.deepEqual(got.subarray(header.length), hello)
    s.destroy()
  })
})

// In-process (`--splice-after 0`) and handed to the splice helper after the default 1 MiB.
for (const [relay, flags] of [
  ['in-process', { 'splice-after': 0 }],
  ['splice helper', {}],
] as const)
  test(`16 MiB over TLS both ways through the gate (${relay}) arrive intact while the client keeps pausing`, async (t) => {
    // Both relay directions read into reused buffers: a write the gate queues (the slow client)
    // must keep its bytes, and a full socket must stop the other side's reads, not lose them.
    // The handover to the helper happens mid-stream, with writes queued: it must not reorder.
    const issued = ca.issueServer(['www.example.test'])
    const echo = createTlsServer({ cert: issued.cert, key: issued.key }, (s) => {
      s.on('error', () => {})
      s.pipe(s)
    })
    await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r))
    const g = await startGate((echo.address() as { port: number }).port, flags)
    t.after(async () => {
      await g.stop()
      echo.close()
    })
    const payload = randomBytes(16 * 1024 * 1024)
    const client = tlsConnect({ host: '127.0.0.1', port: g.port, servername: 'www.example.test', ca: ca.ca })
    await new Promise((r) => client.once('secureConnect', r))
    const hash = createHash('sha256')
    let got = 0
    let sincePause = 0
    let pauses = 0
    const done = new Promise<void>((resolve, reject) => {
      client.on('error', reject)
      client.on('data', (d: Buffer) => {
        hash.update(d)
        got += d.length
        if (got >= payload.length) return resolve()
        // Pause every 512 KiB so the gate's writes to the client queue up and its reads stop.
        sincePause += d.length
        if (sincePause >= 512 * 1024) {
          sincePause = 0
          pauses++
          client.pause()
          setTimeout(() => client.resume(), 2)
        }
      })
    })
    for (let i = 0; i < payload.length; i += 256 * 1024) {
      if (!client.write(payload.subarray(i, i + 256 * 1024))) await new Promise((r) => client.once('drain', r))
    }
    await done
    client.destroy()
    assert.equal(got, payload.length)
    assert.equal(hash.digest('hex'), createHash('sha256').update(payload).digest('hex'))
    assert.ok(pauses > 0, 'the client paused')
    assert.equal(await g.metric('splice_handoffs_total'), relay === 'in-process' ? 0 : 1)
    if (relay === 'splice helper') {
      await waitFor('the helper to exit', async () => (await g.metric('splice_relays')) === 0)
      assert.ok((await g.metric('proxied_bytes_total', { direction: 'client_to_backend' })) > payload.length)
    }
  })
