import assert from 'node:assert/strict'
import { readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
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

describe('an import or change batch that leaves the zone as it is', () => {
  let h: Harness
  before(async () => {
    h = await startHarness()
  })
  after(() => h.close())

  const put = (zoneTextBody: string, headers: Record<string, string>, extra: Record<string, unknown> = {}) =>
    h.call('PUT', `/v1/zones/${ZONE}`, { role: 'primary', zone_text: zoneTextBody, ...extra }, headers)
  const upsertWww = (records: string[], headers: Record<string, string>, extra: Record<string, unknown> = {}) =>
    h.call(
      'POST',
      `/v1/zones/${ZONE}/changes`,
      { changes: [{ action: 'upsert', name: 'www', type: 'A', ttl: 300, records }], ...extra },
      headers,
    )

  /** Everything a publication leaves a trace in. */
  async function traces() {
    const file = join(h.knot.zonesDir, `${ZONE}.zone`)
    const metrics = await (await h.call('GET', '/metrics')).text()
    return {
      served: await h.knot.soaSerial(ZONE),
      file: readFileSync(file, 'utf8'),
      fileMtime: statSync(file).mtimeMs,
      history: (await json(await h.call('GET', `/v1/zones/${ZONE}/history`))).history.length as number,
      audit: (await json(await h.call('GET', `/v1/zones/${ZONE}/audit`))).events.length as number,
      publications: metrics.split('\n').filter((l) => l.startsWith('dnsctl_publications_total{')),
      knotLog: h.knot.log().length,
    }
  }

  test('answers changed: false and publishes nothing: no serial, revision, history, audit or knotd change', async () => {
    let res = await put(zoneText(7, 'mail 300 IN A 192.0.2.25\nmail 300 IN A 192.0.2.26\n'), {})
    const created = await json(res)
    assert.equal(res.status, 201, JSON.stringify(created))
    assert.equal(created.changed, true)
    const revision = created.revision as string
    const ifMatch = { 'if-match': `"${revision}"` }
    const before = await traces()
    assert.equal(before.served, 7)

    // The same file again, with the serial the zone has, a later one or an earlier one; and
    // the same records written another way (order, absolute names, TTL units, comments).
    const same = [
      zoneText(7, 'mail 300 IN A 192.0.2.25\nmail 300 IN A 192.0.2.26\n'),
      zoneText(2026120401, 'mail 300 IN A 192.0.2.25\nmail 300 IN A 192.0.2.26\n'),
      zoneText(3, 'mail 300 IN A 192.0.2.25\nmail 300 IN A 192.0.2.26\n'),
      [
        '$ORIGIN example.test.',
        'mail.example.test. 5m IN A 192.0.2.26 ; listed first',
        'mail 300 A 192.0.2.25',
        'www 300 IN A 192.0.2.10',
        'ns1.example.test. 1h IN A 192.0.2.1',
        '@ 3600 IN NS ns1.example.test.',
        '@ 1h IN SOA ns1 hostmaster.example.test. ( 8 1h 15m 1w 5m )',
        '',
      ].join('\n'),
    ]
    for (const text of same) {
      res = await put(text, ifMatch)
      const body = await json(res)
      assert.equal(res.status, 200, JSON.stringify(body))
      assert.equal(res.headers.get('etag'), `"${revision}"`)
      assert.deepEqual(
        [body.changed, body.created, body.dry_run, body.serial, body.revision, body.warnings],
        [false, false, false, 7, revision, []],
        text,
      )
    }
    // The text/dns body (what `curl --data-binary @file` sends) alike.
    res = await fetch(`${h.base}/v1/zones/${ZONE}`, {
      method: 'PUT',
      headers: { 'content-type': 'text/dns', ...ifMatch },
      body: same[1],
    })
    assert.deepEqual([res.status, (await json(res)).changed], [200, false])

    // A dry run says so too: no record to add or remove, the SOA included.
    res = await put(same[1]!, ifMatch, { dry_run: true })
    const dry = await json(res)
    assert.equal(res.status, 200, JSON.stringify(dry))
    assert.deepEqual([dry.changed, dry.dry_run, dry.serial, dry.revision], [false, true, 7, revision])
    assert.deepEqual(dry.diff, { added: 0, removed: 0, unchanged: 6, records: [] })

    // An upsert of the records an RRset already has (also written another way), and as a dry run.
    res = await upsertWww(['192.0.2.10'], ifMatch)
    const batch = await json(res)
    assert.equal(res.status, 200, JSON.stringify(batch))
    assert.equal(res.headers.get('etag'), `"${revision}"`)
    assert.deepEqual(
      [batch.changed, batch.dry_run, batch.serial, batch.revision, batch.previous_revision, batch.applied],
      [false, false, 7, revision, revision, 1],
    )
    res = await h.call(
      'POST',
      `/v1/zones/${ZONE}/changes`,
      {
        changes: [
          { action: 'upsert', name: 'MAIL.example.test.', type: 'a', ttl: 300, records: ['192.0.2.26', '192.0.2.25'] },
        ],
      },
      ifMatch,
    )
    assert.deepEqual([res.status, (await json(res)).changed], [200, false])
    res = await upsertWww(['192.0.2.10'], ifMatch, { dry_run: true })
    const dryBatch = await json(res)
    assert.deepEqual(
      [dryBatch.changed, dryBatch.serial, dryBatch.diff],
      [false, 7, { added: 0, removed: 0, unchanged: 6, records: [] }],
    )

    // The revision is still checked first: a stale or missing one is refused as before.
    for (const [send, status, code] of [
      [() => put(same[0]!, { 'if-match': '"stale"' }), 412, 'revision_mismatch'],
      [() => put(same[0]!, {}), 428, 'revision_required'],
      [() => put(same[0]!, { 'if-match': '"stale"' }, { dry_run: true }), 412, 'revision_mismatch'],
      [() => upsertWww(['192.0.2.10'], { 'if-match': '"stale"' }), 412, 'revision_mismatch'],
    ] as const) {
      res = await send()
      assert.deepEqual([res.status, (await json(res)).error.code], [status, code])
    }

    assert.deepEqual(await traces(), before, 'nothing was published')
    assert.deepEqual(
      (await json(await h.call('GET', `/v1/zones/${ZONE}/audit`))).events.map((e: { action: string }) => e.action),
      ['create'],
    )
  })

  test('a real change still moves the serial once; a role change is a change', async () => {
    const current = await json(await h.call('GET', `/v1/zones/${ZONE}`))
    const before = await traces()
    // Only the TTL of www differs.
    let res = await h.call(
      'POST',
      `/v1/zones/${ZONE}/changes`,
      { changes: [{ action: 'upsert', name: 'www', type: 'A', ttl: 60, records: ['192.0.2.10'] }] },
      { 'if-match': `"${current.revision}"` },
    )
    const changed = await json(res)
    assert.equal(res.status, 200, JSON.stringify(changed))
    assert.deepEqual([changed.changed, changed.serial], [true, 8])
    assert.notEqual(changed.revision, current.revision)
    assert.equal(await h.knot.soaSerial(ZONE), 8)

    // An import of the text as it was: a change back, serial 9 (not 7, and not twice).
    res = await put(current.zone_text, { 'if-match': `"${changed.revision}"` })
    const imported = await json(res)
    assert.equal(res.status, 200, JSON.stringify(imported))
    assert.deepEqual([imported.changed, imported.serial], [true, 9])
    assert.equal(await h.knot.soaSerial(ZONE), 9)

    // The same text as secondary: a new role is a change.
    res = await h.call(
      'PUT',
      `/v1/zones/${ZONE}`,
      { role: 'secondary', zone_text: current.zone_text },
      { 'if-match': `"${imported.revision}"` },
    )
    const secondary = await json(res)
    assert.equal(res.status, 200, JSON.stringify(secondary))
    assert.deepEqual([secondary.changed, secondary.role, secondary.serial], [true, 'secondary', 10])
    assert.equal(await h.knot.soaSerial(ZONE), 10)

    const after = await traces()
    assert.equal(after.history, before.history + 3)
    assert.equal(after.audit, before.audit + 3)
    assert.ok(after.knotLog > before.knotLog, 'knotd saw the publications')
    assert.deepEqual(
      (await json(await h.call('GET', `/v1/zones/${ZONE}/history`))).history.map((r: { serial: number }) => r.serial),
      [9, 8, 7],
    )
  })

  test('the OpenAPI document describes the changed field of both answers', async () => {
    const doc = await json(await h.call('GET', '/openapi.json'))
    const put = doc.paths['/v1/zones/{zone}'].put.responses['200'].content['application/json'].schema
    const changes = doc.paths['/v1/zones/{zone}/changes'].post.responses['200'].content['application/json'].schema
    for (const schema of [put, changes]) {
      assert.equal(schema.properties.changed.type, 'boolean')
      assert.ok(schema.required.includes('changed'))
    }
  })
})
