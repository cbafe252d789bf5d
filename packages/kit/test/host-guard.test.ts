import assert from 'node:assert/strict'
import { PassThrough } from 'node:stream'
import { after, before, describe, test } from 'node:test'
import { request } from 'undici'
import { createHttpApp, createLogger, type HttpApp, isAllowedHost } from '../src/index.ts'

describe('isAllowedHost', () => {
  test('loopback names and addresses, with or without port, are allowed', () => {
    for (const host of [
      'localhost',
      'LOCALHOST:8053',
      'app.localhost:1',
      '127.0.0.1',
      '127.1.2.3:80',
      '[::1]:8053',
      '[::1]',
      'localhost.',
    ])
      assert.equal(isAllowedHost(host), true, host)
  })
  test('anything else is refused unless configured', () => {
    for (const host of [
      undefined,
      '',
      'attacker.example:8053',
      '10.0.0.1',
      '[::2]',
      'localhost.attacker.example',
      '127.0.0.1.nip.io',
      'a b',
      '::1',
      'localhost:x',
    ])
      assert.equal(isAllowedHost(host), false, String(host))
    assert.equal(isAllowedHost('DNS.internal:8053', ['dns.internal']), true)
  })
})

describe('createHttpApp hostGuard', () => {
  let app: HttpApp
  let base: string
  before(async () => {
    const logger = createLogger({ name: 'testapp', destination: new PassThrough() })
    app = await createHttpApp({ name: 'testapp', logger, hostGuard: { names: ['dns.internal'] } })
    app.put('/v1/zones/:zone', async () => ({ created: true }))
    base = await app.listen({ port: 0, host: '127.0.0.1' })
  })
  after(() => app.close())

  test('a rebinding Host is refused with 403 host_not_allowed before the route runs', async () => {
    const res = await request(`${base}/v1/zones/x`, { method: 'PUT', headers: { host: 'attacker.example:8053' } })
    assert.equal(res.statusCode, 403)
    assert.equal(((await res.body.json()) as { error: { code: string } }).error.code, 'host_not_allowed')
  })

  test('loopback and configured names pass', async () => {
    for (const host of [new URL(base).host, 'localhost:8053', 'dns.internal']) {
      const res = await request(`${base}/v1/zones/x`, { method: 'PUT', headers: { host } })
      assert.equal(res.statusCode, 200, host)
      await res.body.dump()
    }
  })
})
