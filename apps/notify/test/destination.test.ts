import assert from 'node:assert/strict'
import { test } from 'node:test'
import { DestinationError, resolveDestination } from '../src/actions/destination.ts'

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
  assert.equal(ok.address, '127.0.0.1')
  assert.equal(ok.family, 4)
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
  assert.deepEqual([pinned.address, pinned.family], ['8.8.8.8', 4])
  await assert.rejects(
    resolveDestination(new URL('http://hooks.example.org/'), false, answers('8.8.8.8')),
    /https only/,
  )
})
