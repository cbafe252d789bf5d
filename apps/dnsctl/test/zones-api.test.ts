import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { after, before, describe, test } from 'node:test'
import { dnsQuery } from '@gatehouse/testkit'
import { type Harness, json, startHarness, ZONE, zoneText } from './helpers.ts'

describe('zones API against a real knotd', () => {
  let h: Harness
  before(async () => {
    h = await startHarness()
  })
  after(() => h.close())

  test('create, read, change, delete', async () => {
    let res = await h.call('PUT', `/v1/zones/${ZONE}`, { role: 'primary', zone_text: zoneText(7) })
    const created = await json(res)
    assert.equal(res.status, 201, JSON.stringify(created))
    assert.equal(created.serial, 7)
    assert.equal(res.headers.get('etag'), `"${created.revision}"`)
    assert.equal(await h.knot.soaSerial(ZONE), 7)

    res = await h.call('GET', '/openapi.json')
    assert.equal(res.status, 200)
    assert.ok(Object.keys((await json(res)).paths).includes('/v1/zones/{zone}/changes'))

    res = await h.call('GET', '/v1/zones')
    assert.deepEqual(
      (await json(res)).zones.map((z: { name: string }) => z.name),
      [ZONE],
    )

    res = await h.call('GET', `/v1/zones/${ZONE}.`)
    assert.equal(res.headers.get('etag'), `"${created.revision}"`)
    assert.match((await json(res)).zone_text, /^\$ORIGIN example\.test\.\n@ 3600 IN SOA /)

    res = await h.call('GET', `/v1/zones/${ZONE}/rrsets`, undefined, { 'if-none-match': `"${created.revision}"` })
    assert.equal(res.status, 304)
    assert.equal(res.headers.get('etag'), `"${created.revision}"`)

    res = await h.call('GET', `/v1/zones/${ZONE.toUpperCase()}/rrsets`)
    const body = await json(res)
    assert.equal(res.headers.get('etag'), `"${created.revision}"`)
    assert.deepEqual(
      body.rrsets.find((s: { name: string; type: string }) => s.name === 'www' && s.type === 'A'),
      { name: 'www', type: 'A', ttl: 300, records: ['192.0.2.10'] },
    )

    res = await h.call(
      'POST',
      `/v1/zones/${ZONE}/changes`,
      { changes: [{ action: 'upsert', name: 'api', type: 'A', ttl: 60, records: ['192.0.2.20', '192.0.2.21'] }] },
      { 'if-match': `"${created.revision}"`, 'x-dns-actor': 'alice' },
    )
    const changed = await json(res)
    assert.equal(res.status, 200, JSON.stringify(changed))
    assert.equal(changed.serial, 8)
    assert.equal(await h.knot.soaSerial(ZONE), 8)
    const answer = await dnsQuery(h.knot.port, `api.${ZONE}`, 'A')
    assert.deepEqual(answer.answers.map((a) => (a as { data: string }).data).sort(), ['192.0.2.20', '192.0.2.21'])

    res = await h.call('GET', `/v1/zones/${ZONE}/audit`)
    const audit = await json(res)
    assert.equal(audit.events[0].actor, 'alice')
    assert.equal(audit.events[0].outcome, 'committed')
    assert.equal(audit.events[0].before_revision, created.revision)
    res = await h.call('GET', `/v1/zones/${ZONE}/history`)
    assert.equal((await json(res)).history[0].revision, created.revision)

    const metrics = await (await h.call('GET', '/metrics')).text()
    assert.match(metrics, /^dnsctl_publications_total\{action="changes",outcome="committed"\} 1$/m)
    assert.match(metrics, /^dnsctl_publications_total\{action="create",outcome="committed"\} 1$/m)
    assert.match(metrics, /^dnsctl_zones\{role="primary"\} 1$/m)
    // The background jobs' series exist from the start (the kit's periodic), for rate() and absent().
    assert.match(metrics, /^dnsctl_job_failures_total\{job="reconcile"\} 0$/m)

    res = await h.call('DELETE', `/v1/zones/${ZONE}`, { expected_revision: changed.revision })
    assert.equal(res.status, 200, JSON.stringify(await res.clone().json()))
    assert.equal(await h.knot.soaSerial(ZONE), undefined)
    assert.equal((await dnsQuery(h.knot.port, ZONE, 'SOA')).rcode, 'REFUSED')
    assert.throws(() => readFileSync(`${h.knot.zonesDir}/${ZONE}.zone`))
  })
})

describe('history retention', () => {
  test('--history-keep bounds the prior revisions kept per zone, newest first', async () => {
    const h = await startHarness({ env: { DNSCTL_HISTORY_KEEP: '2' } })
    try {
      let res = await h.call('PUT', `/v1/zones/${ZONE}`, { role: 'primary', zone_text: zoneText(1) })
      let revision = (await json(res)).revision as string
      const seen = [revision]
      for (let i = 0; i < 4; i++) {
        res = await h.call(
          'POST',
          `/v1/zones/${ZONE}/changes`,
          { changes: [{ action: 'upsert', name: 'n', type: 'A', ttl: 60, records: [`192.0.2.${i}`] }] },
          { 'if-match': `"${revision}"` },
        )
        assert.equal(res.status, 200)
        revision = (await json(res)).revision
        seen.push(revision)
      }
      const history = await json(await h.call('GET', `/v1/zones/${ZONE}/history`))
      assert.deepEqual(
        history.history.map((r: { revision: string }) => r.revision),
        [seen[3], seen[2]],
      )
    } finally {
      await h.close()
    }
  })
})
