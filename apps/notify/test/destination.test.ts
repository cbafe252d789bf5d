import assert from 'node:assert/strict'
import { test } from 'node:test'
import { DestinationError, resolveDestination } from '../src/actions/destination.ts'
import { sendCallback } from '../src/actions/dispatch.ts'
import { startCallbackServer } from './callback-server.ts'

const answers =
  (...addresses: string[]) =>
  async () =>
    addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }))

test('literal loopback, private, link-local and IPv6-mapped destinations are refused at dispatch', async () => {
  for (const url of [
    'https://127.0.0.1/',
    'https://10.0.0.1/',
    'https://172.16.0.1/',
    'https://169.254.169.254/',
    'https://[::1]/',
    'https://[fe80::1]/',
    'https://[::ffff:127.0.0.1]/',
    'https://[::ffff:10.0.0.1]/',
    'https://[::ffff:169.254.169.254]/',
    'https://100.64.0.1/',
  ]) {
    await assert.rejects(resolveDestination(new URL(url), false), DestinationError, url)
  }
  const ok = await resolveDestination(new URL('https://[::ffff:127.0.0.1]/'), true)
  assert.deepEqual(ok.addresses, [{ address: '127.0.0.1', family: 4 }])
})

test('a name is judged by every address it resolves to, and the checked address is pinned', async () => {
  const url = new URL('https://hooks.example.org/x')
  await assert.rejects(resolveDestination(url, false, answers('127.0.0.1')), /loopback, private or link-local/)
  await assert.rejects(resolveDestination(url, false, answers('203.0.113.9', '::ffff:10.1.1.1')), DestinationError)
  await assert.rejects(resolveDestination(url, false, answers('fe80::1')), DestinationError)
  await assert.rejects(resolveDestination(url, false, answers()), /no address/)
  await assert.rejects(
    resolveDestination(url, false, async () => {
      throw new Error('ENOTFOUND')
    }),
    /cannot resolve/,
  )
  const pinned = await resolveDestination(url, false, answers('8.8.8.8', '2001:4860:4860::8888'))
  assert.deepEqual(pinned.addresses, [
    { address: '8.8.8.8', family: 4 },
    { address: '2001:4860:4860::8888', family: 6 },
  ])
  await assert.rejects(
    resolveDestination(new URL('http://hooks.example.org/'), false, answers('8.8.8.8')),
    /https only/,
  )
})

test('the call connects to the checked address: a name is never resolved a second time', async (t) => {
  const cb = await startCallbackServer()
  t.after(() => cb.close())
  let lookups = 0
  // A name the system cannot resolve: only the checked answer can take the call to the server.
  const resolver = async () => {
    lookups++
    return [{ address: '127.0.0.1', family: 4 }]
  }
  const call = {
    url: `http://rebind.invalid:${cb.port}/ok`,
    allowPrivate: true,
    idempotencyKey: 'k-1',
    headers: {},
    body: '{}',
    contentType: 'application/json',
  }
  const limits = { timeoutMs: 2000, maxBytes: 1024 }
  const ok = await sendCallback(call, limits, resolver)
  assert.equal(ok.outcome, 'success', ok.error ?? '')
  assert.equal(lookups, 1)
  assert.equal(cb.received.at(-1)?.headers.host, `rebind.invalid:${cb.port}`)
  // Without allow_private the same answer is refused before any connection.
  const before = cb.received.length
  const refused = await sendCallback(
    { ...call, allowPrivate: false, url: `https://rebind.invalid:${cb.port}/ok` },
    limits,
    resolver,
  )
  assert.equal(refused.outcome, 'failure')
  assert.equal(cb.received.length, before)
  // The system resolver path: localhost resolves to loopback and the pinned connection succeeds.
  const local = await sendCallback({ ...call, url: `http://localhost:${cb.port}/ok` }, limits)
  assert.equal(local.outcome, 'success', local.error ?? '')
})
