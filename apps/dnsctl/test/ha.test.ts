/**
 * HA roles with two real dnsctl + knotd pairs on loopback: Knot replication configured by
 * dnsctl (NOTIFY + transfer), read-only refusals on the secondary, the status from both sides,
 * the VIP moving between two network namespaces, and the promotion.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { promisify } from 'node:util'
import { freePort, isRoot, type Knot, startKnot, waitFor } from '@gatehouse/testkit'
import { type Harness, json, startHarness, ZONE, zoneText } from './helpers.ts'
import { createNetns, type Netns } from './netns.ts'

const VIP = '198.51.100.53'
const run = promisify(execFile)

describe('HA roles', () => {
  let knotP: Knot
  let knotS: Knot
  let p: Harness
  let s: Harness
  let nsA: Netns
  let nsB: Netns
  let revision: string
  let pClosed = false

  before(async () => {
    if (!isRoot)
      throw new Error('the HA tests need root: they create network namespaces (ip netns) for the VIP')
      // The primary keeps changes in its journal (what an operator sets for IXFR); dnsctl's zone
      // files then load as differences.
    ;[knotP, knotS] = await Promise.all([
      startKnot({ template: { 'journal-content': 'changes', 'zonefile-load': 'difference' } }),
      startKnot(),
    ])
    const [metricsP, metricsS] = [await freePort(), await freePort()]
    nsA = createNetns('a')
    nsB = createNetns('b')
    nsA.addAddress(VIP)
    const common = { DNSCTL_HA_VIP: VIP, DNSCTL_HA_SYNC_INTERVAL: '100ms', DNSCTL_HA_PEER_TIMEOUT: '3s' }
    p = await startHarness({
      knot: knotP,
      env: {
        ...common,
        DNSCTL_HA_ROLE: 'primary',
        DNSCTL_METRICS_LISTEN: `127.0.0.1:${metricsP}`,
        DNSCTL_HA_PEER_API: `127.0.0.1:${metricsS}`,
        DNSCTL_HA_PEER_KNOT: `127.0.0.1:${knotS.port}`,
        DNSCTL_HA_VIP_NETNS: nsA.name,
      },
    })
    s = await startHarness({
      knot: knotS,
      env: {
        ...common,
        DNSCTL_HA_ROLE: 'secondary',
        DNSCTL_METRICS_LISTEN: `127.0.0.1:${metricsS}`,
        DNSCTL_HA_PEER_API: `127.0.0.1:${metricsP}`,
        DNSCTL_HA_PEER_KNOT: `127.0.0.1:${knotP.port}`,
        DNSCTL_HA_VIP_NETNS: nsB.name,
      },
    })
  })

  after(async () => {
    await s?.close()
    if (!pClosed) await p?.close()
    await knotP?.stop()
    await knotS?.stop()
    nsA?.remove()
    nsB?.remove()
  })

  test('a zone created and changed on the primary reaches the secondary knotd (NOTIFY + AXFR, then IXFR)', async () => {
    const res = await p.call('PUT', `/v1/zones/${ZONE}`, { role: 'primary', zone_text: zoneText(10) })
    assert.equal(res.status, 201, await res.clone().text())
    revision = (await json(res)).revision
    await waitFor('the secondary to serve serial 10', async () => (await knotS.soaSerial(ZONE)) === 10)
    const change = await p.call(
      'POST',
      `/v1/zones/${ZONE}/changes`,
      { changes: [{ action: 'upsert', name: 'api', type: 'A', ttl: 300, records: ['192.0.2.44'] }] },
      { 'if-match': `"${revision}"` },
    )
    assert.equal(change.status, 200, await change.clone().text())
    revision = (await json(change)).revision
    await waitFor('the secondary to serve serial 11', async () => (await knotS.soaSerial(ZONE)) === 11)
    // The change came as an incremental transfer, not a whole zone.
    assert.match(knotS.log(), /\[example\.test\.\] IXFR, incoming, remote [^,]+, finished/)
    assert.match(await knotS.kdig('+short', `api.${ZONE}`, 'A'), /192\.0\.2\.44/)

    // The secondary follows the primary's zone list: a new zone appears, a deleted one goes.
    const other = await p.call('PUT', '/v1/zones/other.test', {
      role: 'primary',
      zone_text: zoneText(5).replaceAll('example.test', 'other.test'),
    })
    assert.equal(other.status, 201)
    await waitFor('the secondary to serve other.test', async () => (await knotS.soaSerial('other.test')) === 5)
    const gone = await p.call('DELETE', '/v1/zones/other.test', { expected_revision: (await json(other)).revision })
    assert.equal(gone.status, 200, await gone.clone().text())
    await waitFor(
      'the secondary to drop other.test',
      async () => !(await knotS.knotc('conf-read', 'zone')).includes('other.test'),
    )
  })

  test('the secondary refuses every mutation with 423 and the reason; reads and dry runs work', async () => {
    const attempts: [string, string, unknown][] = [
      [
        'PUT',
        '/v1/zones/other.test',
        { role: 'primary', zone_text: zoneText(1).replaceAll('example.test', 'other.test') },
      ],
      ['POST', `/v1/zones/${ZONE}/changes`, { changes: [{ action: 'delete', name: 'www', type: 'A' }] }],
      ['DELETE', `/v1/zones/${ZONE}`, { expected_revision: 'x' }],
      ['PUT', '/v1/blocklists/config', { sources: [], allow: [], deny: [] }],
      ['PUT', `/v1/zones/${ZONE}`, { invalid: 'body' }],
    ]
    attempts.push([
      'POST',
      '/v1/providers/extdns/zones/example.com/changes',
      { confirm: true, changes: [{ action: 'delete', name: 'www', type: 'A' }] },
    ])
    for (const [method, path, body] of attempts) {
      const res = await s.call(method, path, body)
      assert.equal(res.status, 423, `${method} ${path}`)
      const err = (await json(res)).error
      assert.equal(err.code, 'read_only_secondary')
      assert.match(err.message, /HA secondary/)
    }
    const dry = await s.call('PUT', '/v1/zones/other.test', {
      role: 'primary',
      zone_text: zoneText(1).replaceAll('example.test', 'other.test'),
      dry_run: true,
    })
    assert.equal(dry.status, 200, await dry.clone().text())
    const dryText = await fetch(`${s.base}/v1/zones/other.test?dry_run=true`, {
      method: 'PUT',
      headers: { 'content-type': 'text/dns' },
      body: zoneText(1).replaceAll('example.test', 'other.test'),
    })
    assert.equal(dryText.status, 200, await dryText.clone().text())
    assert.equal((await s.call('GET', '/v1/zones')).status, 200)
  })

  test('status from both sides: roles, write modes, VIP, peer, replication freshness, snapshot', async () => {
    const fromP = await waitFor('the primary to see the zone in sync', async () => {
      const st = await json(await p.call('GET', '/v1/status/ha'))
      return st.replication.state === 'in_sync' ? st : undefined
    })
    assert.equal(fromP.role, 'primary')
    assert.equal(fromP.write_mode, 'read-write')
    assert.deepEqual(fromP.vip, { address: VIP, owned: true, interface: 'vip0' })
    assert.equal(fromP.peer.reachable, true, JSON.stringify(fromP.peer))
    assert.equal(typeof fromP.peer.latency_ms, 'number')
    assert.equal(fromP.peer.status.role, 'secondary')
    assert.equal(fromP.peer.status.write_mode, 'read-only')
    assert.equal(fromP.peer.status.vip.owned, false)
    assert.equal(fromP.peer.status.snapshot.zones, 1)
    assert.deepEqual(fromP.replication.zones, [
      { zone: ZONE, primary_serial: 11, secondary_serial: 11, in_sync: true, lag_seconds: 0 },
    ])
    assert.equal(fromP.snapshot.zones, 1)
    assert.ok(fromP.snapshot.last_at)

    // The secondary answers the same on its read-only metrics listener (what the peer fetches).
    const metricsUrl = `http://${s.config.metricsListen!.host}:${s.config.metricsListen!.port}`
    const fromS = await json(await fetch(`${metricsUrl}/v1/status/ha?include_peer=false`))
    assert.equal(fromS.role, 'secondary')
    assert.equal(fromS.write_mode, 'read-only')
    assert.match(fromS.read_only_reason, /replicates from the primary/)
    assert.equal(fromS.peer, null)
    assert.equal(fromS.replication.state, 'in_sync')
    const metrics = await (await fetch(`${metricsUrl}/metrics`)).text()
    assert.match(metrics, /^dnsctl_ha_read_only 1$/m)
    assert.match(metrics, /^dnsctl_ha_role\{role="secondary"\} 1$/m)
    assert.match(metrics, /^dnsctl_ha_peer_reachable 1$/m)
    assert.equal((await fetch(`${metricsUrl}/v1/zones`)).status, 404, 'the metrics listener serves no API')
  })

  test('the VIP moves from the primary namespace to the secondary one', async () => {
    nsA.removeAddress(VIP)
    nsB.addAddress(VIP)
    const st = await json(await s.call('GET', '/v1/status/ha'))
    assert.equal(st.vip.owned, true)
    assert.equal(st.peer.status.vip.owned, false)
  })

  test('promotion is refused while the old primary answers and is writable, then succeeds', async () => {
    const refused = await s.call('POST', '/v1/ha/promote', { reason: 'drill' }, { 'x-dns-actor': 'ops' })
    assert.equal(refused.status, 409)
    assert.equal((await json(refused)).error.code, 'peer_still_writable')
    assert.equal((await p.call('POST', '/v1/ha/promote', {})).status, 409, 'a primary cannot be promoted')

    await p.close() // the old primary's dnsctl is gone (its knotd keeps running)
    pClosed = true
    const res = await s.call('POST', '/v1/ha/promote', { reason: 'primary down' }, { 'x-dns-actor': 'ops' })
    assert.equal(res.status, 200, await res.clone().text())
    const body = await json(res)
    assert.equal(body.role, 'primary')
    assert.equal(body.epoch, 1)
    assert.equal(body.zones[0].zone, ZONE)
    assert.equal(body.zones[0].serial, 11)

    const st = await json(await s.call('GET', '/v1/status/ha'))
    assert.equal(st.role, 'primary')
    assert.equal(st.write_mode, 'read-write')
    assert.equal(st.peer.reachable, false)

    // The new primary takes writes through the normal pipeline and its knotd serves them.
    const zone = await json(await s.call('GET', `/v1/zones/${ZONE}`))
    const change = await s.call(
      'POST',
      `/v1/zones/${ZONE}/changes`,
      { changes: [{ action: 'upsert', name: 'after', type: 'A', ttl: 300, records: ['192.0.2.99'] }] },
      { 'if-match': `"${zone.revision}"`, 'x-dns-actor': 'ops' },
    )
    assert.equal(change.status, 200, await change.clone().text())
    assert.equal(await knotS.soaSerial(ZONE), 12)

    const events = (await json(await s.call('GET', '/v1/ha/events'))).events
    assert.deepEqual(
      events.map((e: { outcome: string; actor: string }) => [e.outcome, e.actor]),
      [
        ['committed', 'ops'],
        ['refused', 'ops'],
      ],
    )
    const audit = await json(await s.call('GET', `/v1/zones/${ZONE}/audit`))
    assert.ok(audit.events.some((e: { action: string }) => e.action === 'promote'))

    // The operator command shows the same, and a second promotion is refused with exit code 1.
    const cli = (...args: string[]) =>
      run(process.execPath, [join(import.meta.dirname, '..', 'src', 'main.ts'), ...args, '--url', s.base])
    const { stdout } = await cli('ha', 'status', '--json')
    assert.equal(JSON.parse(stdout).role, 'primary')
    await assert.rejects(cli('ha', 'promote'), (err: { code: number; stderr: string }) => {
      assert.equal(err.code, 1)
      assert.match(err.stderr, /not_secondary/)
      return true
    })
  })

  test('the old primary comes back fenced (read-only), and demotion makes it the new secondary', async () => {
    const old = p.config
    p = await startHarness({
      knot: knotP,
      env: {
        DNSCTL_HA_VIP: VIP,
        DNSCTL_HA_SYNC_INTERVAL: '100ms',
        DNSCTL_HA_PEER_TIMEOUT: '3s',
        DNSCTL_HA_ROLE: 'primary',
        DNSCTL_METRICS_LISTEN: `127.0.0.1:${old.metricsListen!.port}`,
        DNSCTL_HA_PEER_API: `127.0.0.1:${s.config.metricsListen!.port}`,
        DNSCTL_HA_PEER_KNOT: `127.0.0.1:${knotS.port}`,
        DNSCTL_HA_VIP_NETNS: nsA.name,
      },
    })
    pClosed = false
    const fenced = await json(await p.call('GET', '/v1/status/ha'))
    assert.equal(fenced.role, 'primary')
    assert.equal(fenced.write_mode, 'read-only')
    assert.match(fenced.read_only_reason, /fenced/)
    // Fencing is stored: losing sight of the peer later does not make this node writable again.
    const row = await p.db.selectFrom('ha_state').selectAll().executeTakeFirst()
    assert.equal(Number(row?.fenced_by_epoch), 1)
    const refused = await p.call('PUT', '/v1/zones/other.test', {
      role: 'primary',
      zone_text: zoneText(1).replaceAll('example.test', 'other.test'),
    })
    assert.equal(refused.status, 423)
    assert.equal((await s.call('POST', '/v1/ha/demote', {})).status, 409, 'the writable primary cannot demote itself')

    const res = await p.call('POST', '/v1/ha/demote', { reason: 'rejoin' }, { 'x-dns-actor': 'ops' })
    assert.equal(res.status, 200, await res.clone().text())
    assert.deepEqual((await json(res)).role, 'secondary')
    // Replication now runs the other way: a change on the new primary reaches the old one's knotd.
    const zone = await json(await s.call('GET', `/v1/zones/${ZONE}`))
    const change = await s.call(
      'POST',
      `/v1/zones/${ZONE}/changes`,
      { changes: [{ action: 'upsert', name: 'back', type: 'A', ttl: 300, records: ['192.0.2.7'] }] },
      { 'if-match': `"${zone.revision}"` },
    )
    assert.equal(change.status, 200)
    const serial = (await json(change)).serial
    await waitFor('the demoted side to serve the new serial', async () => (await knotP.soaSerial(ZONE)) === serial)
    const st = await waitFor('the new primary to see its zones in sync', async () => {
      const body = await json(await s.call('GET', '/v1/status/ha'))
      return body.replication.state === 'in_sync' ? body : undefined
    })
    assert.equal(st.peer.status.role, 'secondary')
  })
})
