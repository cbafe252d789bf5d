/**
 * Limits applied to every client before anything is read: the per-IP budget, the global cap,
 * the handshake deadline, and clean closes on bad input.
 */
import assert from 'node:assert/strict'
import { connect, type Socket } from 'node:net'
import { after, before, describe, test } from 'node:test'
import {
  captureClientHello,
  DROPBEAR_FP,
  fakeBackend,
  metric,
  rawClient,
  readEntries,
  startGate,
  waitFor,
} from './helpers.ts'

function openIdle(port: number): Promise<{ socket: Socket; identification: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    let buf = ''
    socket.on('data', (d) => {
      buf += d.toString('latin1')
      if (buf.includes('\n')) resolve({ socket, identification: buf.trim() })
    })
    socket.on('error', reject)
    socket.on('close', () => resolve({ socket, identification: buf.trim() }))
  })
}

describe('per-source-IP budget (default burst 120)', () => {
  let backend: Awaited<ReturnType<typeof fakeBackend>>
  let gate: Awaited<ReturnType<typeof startGate>>
  before(async () => {
    backend = await fakeBackend()
    // A tiny refill rate keeps the test independent of how fast 121 connections open.
    gate = await startGate(backend.port, ['--ip-rate', '0.001'])
  })
  after(async () => {
    await gate?.stop()
    await backend?.close()
  })

  test('120 connections get the identification, the 121st is dropped with a RATELIMIT line', async () => {
    const results = []
    for (let i = 0; i < 120; i++) results.push(await rawClient(gate.port, (s) => s.end()))
    assert.ok(results.every((r) => r.identification === 'SSH-2.0-OpenSSH_9.9 gatehouse-fake'))
    const dropped = await rawClient(gate.port)
    assert.equal(dropped.identification, '')
    await waitFor('RATELIMIT log line', () => /RATELIMIT 127\.0\.0\.1/.test(gate.log()))
    const m = await gate.metrics()
    assert.equal(metric(m, 'sshproxy_connection_results_total', { result: 'ratelimit' }), 1)
    assert.equal(metric(m, 'sshproxy_connections_total'), 121)
  })
})

describe('global cap, handshake deadline and bad input', () => {
  let backend: Awaited<ReturnType<typeof fakeBackend>>
  let gate: Awaited<ReturnType<typeof startGate>>
  before(async () => {
    backend = await fakeBackend()
    gate = await startGate(backend.port, ['--max-connections', '3', '--handshake-timeout', '1s'])
  })
  after(async () => {
    await gate?.stop()
    await backend?.close()
  })

  test('above the cap a connection is dropped with an OVERLOAD line; a freed slot is usable again', async () => {
    const held = await Promise.all([openIdle(gate.port), openIdle(gate.port), openIdle(gate.port)])
    assert.ok(held.every((h) => h.identification.startsWith('SSH-2.0-')))
    const dropped = await rawClient(gate.port)
    assert.equal(dropped.identification, '')
    await waitFor('OVERLOAD log line', () => /"msg":"OVERLOAD"/.test(gate.log()))
    assert.equal(metric(await gate.metrics(), 'sshproxy_active_connections'), 3)
    for (const h of held) h.socket.destroy()
    await waitFor('slots released', async () => metric(await gate.metrics(), 'sshproxy_active_connections') === 0)
    const again = await rawClient(gate.port, (s) => s.end())
    assert.match(again.identification, /^SSH-2\.0-/)
    assert.equal(metric(await gate.metrics(), 'sshproxy_connection_results_total', { result: 'overload' }), 1)
  })

  test('a silent client is closed at the handshake deadline', async () => {
    const r = await rawClient(gate.port)
    assert.match(r.identification, /^SSH-2\.0-/)
    assert.equal(r.ended, 'end')
    await waitFor(
      'handshake_timeout counted',
      async () =>
        metric(await gate.metrics(), 'sshproxy_connection_results_total', { result: 'handshake_timeout' }) === 1,
    )
  })

  test('garbage instead of an identification gets a clean close and no backend connection', async () => {
    const r = await rawClient(gate.port, Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n'))
    assert.equal(r.ended, 'end')
    const oversized = Buffer.concat([
      Buffer.from('SSH-2.0-test\r\n'),
      Buffer.from([0x00, 0x01, 0x00, 0x00]), // packet_length 65536 > 32 KiB
    ])
    const r2 = await rawClient(gate.port, oversized)
    assert.equal(r2.ended, 'end')
    await waitFor(
      'protocol errors counted',
      async () => metric(await gate.metrics(), 'sshproxy_connection_results_total', { result: 'protocol_error' }) === 2,
    )
    await waitFor(
      'protocol errors logged',
      () => /"reason":"identification_invalid"/.test(gate.log()) && /"reason":"packet_too_large"/.test(gate.log()),
    )
    assert.equal(backend.connections(), 1, 'only the startup probe reached the backend')
  })
})

// Past the open-file limit the kernel refuses accept(), and libuv closes the waiting connections
// without telling Node: no log line, no count. The gate lowers its cap to what the limit holds,
// so the excess is refused as an OVERLOAD it logs and counts.
test('under a low open-file limit the cap is lowered to fit, and every connection past it is counted', async (t) => {
  const backend = await fakeBackend()
  t.after(() => backend.close())
  const gate = await startGate(backend.port, ['--ip-burst', '100000'], undefined, {}, { openFiles: 256 })
  t.after(() => gate.stop())
  // More idle clients than the descriptors hold, all at once.
  const clients = await Promise.all(Array.from({ length: 300 }, () => openIdle(gate.port)))
  const held = clients.filter((c) => c.identification.startsWith('SSH-2.0-'))
  const refused = clients.length - held.length
  assert.ok(refused > 0, 'some were refused')
  await waitFor('every refusal counted', async () => {
    const m = await gate.metrics()
    return metric(m, 'sshproxy_connection_results_total', { result: 'overload' }) === refused
  })
  assert.equal(metric(await gate.metrics(), 'sshproxy_connections_total'), clients.length)
  const lowered =
    /"allowed":(\d+),"open_file_limit":256,"msg":"max_connections lowered to \d+: the open file limit/.exec(gate.log())
  assert.ok(lowered, gate.log())
  assert.equal(held.length, Number(lowered[1]), 'the lowered cap is what holds')
  for (const c of held) c.socket.destroy()
  await waitFor('slots released', async () => metric(await gate.metrics(), 'sshproxy_active_connections') === 0)
  const again = await rawClient(gate.port, (s) => s.end())
  assert.match(again.identification, /^SSH-2\.0-/)
})

describe('max_fingerprints from the config file', () => {
  test('a new fingerprint over the cap prunes the oldest non-approved entry', async (t) => {
    const [openssh, dropbear] = await Promise.all([captureClientHello('openssh'), captureClientHello('dropbear')])
    const backend = await fakeBackend()
    t.after(() => backend.close())
    const gate = await startGate(backend.port, [], undefined, { max_fingerprints: 1 })
    t.after(() => gate.stop())
    await rawClient(gate.port, openssh)
    await waitFor('first entry', async () => (await readEntries(gate.dbPath)).length === 1)
    await rawClient(gate.port, dropbear)
    await waitFor('cap applied', async () => {
      const entries = await readEntries(gate.dbPath)
      return entries.length === 1 && entries[0]!.fingerprint === DROPBEAR_FP
    })
    await waitFor('pruning logged', () => /pruned fingerprint entries over max_fingerprints/.test(gate.log()))
  })
})
