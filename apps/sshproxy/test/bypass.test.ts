/**
 * Trusted-range bypass: static ranges (--trusted-range, `trusted_ranges`) and the managed
 * ones the control plane sends, stored in their own table and replaced atomically.
 * Bypassed clients skip the verdict but are still rate limited and observed.
 */
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { before, test } from 'node:test'
import { createLogger } from '@gatehouse/kit'
import { tempDir } from '@gatehouse/testkit'
import { BypassRanges, loadManagedRanges, replaceManagedRanges } from '../src/bypass/ranges.ts'
import { openStore } from '../src/db/index.ts'
import {
  captureClientHello,
  fakeBackend,
  metric,
  OPENSSH_FP,
  rawClient,
  readEntries,
  startGate,
  waitFor,
} from './helpers.ts'

const logger = createLogger({ name: 'bypass-test', destination: new PassThrough(), level: 'silent' })

let opensshHello: Buffer
before(async () => {
  opensshHello = await captureClientHello('openssh')
})

test('managed ranges replace each other atomically, persist across a restart, and static ranges stay', async (t) => {
  const dir = tempDir('sshproxy-bypass-')
  t.after(() => dir.remove())
  const path = join(dir.path, 'gate.db')
  let store = await openStore(path)
  const bypass = new BypassRanges(['10.0.0.0/8'])
  assert.equal(bypass.has('10.1.2.3'), true)
  assert.equal(bypass.has('192.0.2.1'), false)
  await replaceManagedRanges(store.db, bypass, ['192.0.2.0/24', '2001:db8::/32', '192.0.2.0/24'], logger)
  assert.equal(bypass.has('192.0.2.1'), true)
  assert.equal(bypass.has('2001:db8::1'), true)
  assert.deepEqual(await loadManagedRanges(store.db), ['192.0.2.0/24', '2001:db8::/32'])
  // An invalid range from the control plane is ignored (logged), the rest applies; loose host bits are cleared.
  await replaceManagedRanges(store.db, bypass, ['198.51.100.7/24', 'not-a-range'], logger)
  assert.equal(bypass.has('192.0.2.1'), false, 'the previous managed list is gone')
  assert.equal(bypass.has('198.51.100.200'), true)
  assert.equal(bypass.has('10.9.9.9'), true, 'static ranges stay')
  assert.deepEqual(bypass.managedRanges, ['198.51.100.0/24'])
  await store.close()
  store = await openStore(path)
  t.after(() => store.close())
  const restarted = new BypassRanges(['10.0.0.0/8'], await loadManagedRanges(store.db))
  assert.equal(restarted.has('198.51.100.1'), true)
  await replaceManagedRanges(store.db, restarted, [], logger)
  assert.deepEqual(await loadManagedRanges(store.db), [])
  assert.equal(restarted.has('198.51.100.1'), false)
  assert.equal(restarted.has('10.0.0.1'), true)
  assert.deepEqual(restarted.staticRanges, ['10.0.0.0/8'])
})

test('a client in a static --trusted-range is relayed without a verdict, still observed and rate limited', async (t) => {
  const backend = await fakeBackend()
  t.after(() => backend.close())
  const gate = await startGate(backend.port, [
    '--trusted-range',
    '127.0.0.0/8',
    '--ip-burst',
    '2',
    '--ip-rate',
    '0.001',
  ])
  t.after(() => gate.stop())
  const r = await rawClient(gate.port, (socket) => {
    socket.write(opensshHello)
    // The fake backend echoes: seeing our bytes back means the relay carried them.
    let back = Buffer.alloc(0)
    socket.on('data', (d: Buffer) => {
      back = Buffer.concat([back, d])
      if (back.includes(opensshHello)) socket.end()
    })
  })
  assert.ok(r.received.includes(opensshHello), 'relayed to the backend and echoed back')
  const e = await waitFor('the bypassed client observed', async () =>
    (await readEntries(gate.dbPath)).find((x) => x.fingerprint === OPENSSH_FP),
  )
  assert.equal(e.decided_at, null, 'no verdict was made')
  assert.equal(e.verdict, 'pending')
  // The per-IP budget (burst 2) still applies to trusted sources.
  await rawClient(gate.port, (socket) => socket.end())
  await rawClient(gate.port, (socket) => socket.end())
  const m = await waitFor('the rate limit counted', async () => {
    const text = await gate.metrics()
    return (metric(text, 'sshproxy_connection_results_total', { result: 'ratelimit' }) ?? 0) >= 1 ? text : undefined
  })
  assert.equal(metric(m, 'sshproxy_connection_results_total', { result: 'bypassed' }), 1)
  assert.equal(metric(m, 'sshproxy_connection_results_total', { result: 'rejected_unknown' }), 0)
  await waitFor('bypass logged', () => /"result":"bypassed"/.test(gate.log()))
})
