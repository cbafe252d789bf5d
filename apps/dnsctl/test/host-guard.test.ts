/**
 * DNS rebinding: the API has no authentication and relies on being reachable from loopback
 * only, so a request whose Host names anything else (a web page's attacker.example that
 * resolves to 127.0.0.1) is refused before it can change a zone.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { request } from 'undici'
import { type Harness, startHarness, ZONE, zoneText } from './helpers.ts'

describe('dnsctl Host guard', () => {
  let h: Harness
  before(async () => {
    h = await startHarness({ env: { DNSCTL_ALLOWED_HOSTS: 'dns.internal' } })
  })
  after(() => h.close())

  const put = (host: string, zone: string) =>
    request(`${h.base}/v1/zones/${zone}`, {
      method: 'PUT',
      headers: { host, 'content-type': 'application/json' },
      body: JSON.stringify({ role: 'primary', zone_text: zoneText(1).replaceAll(ZONE, zone) }),
    })

  test('a rebinding Host cannot create a zone', async () => {
    const res = await put('attacker.example:8053', 'rebound.test')
    assert.equal(res.statusCode, 403)
    assert.equal(((await res.body.json()) as { error: { code: string } }).error.code, 'host_not_allowed')
    const list = (await (await h.call('GET', '/v1/zones')).json()) as { zones: Array<{ name: string }> }
    assert.deepEqual(list.zones, [])
    const get = await request(`${h.base}/v1/zones`, { headers: { host: 'attacker.example' } })
    assert.equal(get.statusCode, 403)
    await get.body.dump()
  })

  test('loopback names and configured names are answered', async () => {
    for (const [host, zone] of [
      [new URL(h.base).host, 'one.test'],
      ['localhost:8053', 'two.test'],
      ['DNS.internal', 'three.test'],
    ] as const) {
      const res = await put(host, zone)
      assert.equal(res.statusCode, 201, `${host}: ${await res.body.text()}`)
    }
  })

  test('a NUL character in a zone name or text is a 400, not stored', async () => {
    const res = await request(`${h.base}/v1/zones/nul.test`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        role: 'primary',
        zone_text: `${zoneText(1).replaceAll(ZONE, 'nul.test')}x\u0000 TXT "a"\n`,
      }),
    })
    assert.equal(res.statusCode, 400)
    const body = (await res.body.json()) as { error: { code: string; path: string } }
    assert.equal(body.error.path, 'body.zone_text')
    assert.equal((await h.call('GET', '/v1/zones/nul.test')).status, 404)
  })
})
