/** The HA and provider settings: cross-field rules listed at once, and the example config. */
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { ConfigError } from '@gatehouse/kit'
import { loadDnsctlConfig } from '../src/config.ts'

describe('HA and provider configuration', () => {
  test('an HA role needs the peer knotd and the metrics listener; a secondary also the peer API', () => {
    assert.throws(
      () => loadDnsctlConfig(['--ha-role', 'secondary'], {}),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError)
        assert.equal(err.lines.length, 3, err.message)
        assert.match(err.message, /ha\.peerKnot/)
        assert.match(err.message, /ha\.peerApi/)
        assert.match(err.message, /metricsListen/)
        return true
      },
    )
    const ok = loadDnsctlConfig([], {
      DNSCTL_HA_ROLE: 'primary',
      DNSCTL_HA_PEER_KNOT: '10.0.0.2:53',
      DNSCTL_METRICS_LISTEN: '10.0.0.1:9153',
      DNSCTL_HA_VIP: '2001:db8::53',
    })
    assert.deepEqual(ok.ha.peerKnot, { host: '10.0.0.2', port: 53 })
    assert.equal(ok.ha.peerTimeout, 1000)
    assert.throws(() => loadDnsctlConfig([], { DNSCTL_HA_VIP: 'vip.example' }), /DNSCTL_HA_VIP|not an IP address/)
    assert.throws(() => loadDnsctlConfig([], { DNSCTL_HA_VIP_NETNS: 'a b' }), ConfigError)
  })

  test('provider zones need a token file; names are normalized; the API must be https', () => {
    assert.throws(() => loadDnsctlConfig([], { DNSCTL_PROVIDER_ZONES: 'example.com' }), /provider\.tokenFile/)
    const ok = loadDnsctlConfig([], {
      DNSCTL_PROVIDER_ZONES: 'Example.COM.,shop.example',
      DNSCTL_PROVIDER_TOKEN_FILE: '/etc/gatehouse/provider-token',
    })
    assert.deepEqual(ok.provider.zones, ['example.com', 'shop.example'])
    assert.throws(() => loadDnsctlConfig([], { DNSCTL_PROVIDER_ZONES: 'bad zone' }), ConfigError)
    assert.throws(() => loadDnsctlConfig([], { DNSCTL_PROVIDER_API_URL: 'http://api.example' }), /https/)
  })

  test('the example config carries the new sections', () => {
    const config = loadDnsctlConfig(['--config', join(import.meta.dirname, '..', 'config.example.json')], {})
    assert.equal(config.ha.role, 'standalone')
    assert.deepEqual(config.metricsListen, { host: '127.0.0.1', port: 9153 })
    assert.equal(config.provider.apiUrl, 'https://api.cloudflare.com/client/v4')
  })
})
