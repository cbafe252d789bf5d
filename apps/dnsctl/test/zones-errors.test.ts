import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import fc from 'fast-check'
import { type Harness, json, startHarness, ZONE, zoneText } from './helpers.ts'

/** Every refusal must leave the zone untouched: same revision, same served serial. */
describe('zones API refusals (spec error list)', () => {
  let h: Harness
  let revision: string
  before(async () => {
    h = await startHarness()
    const res = await h.call('PUT', `/v1/zones/${ZONE}`, {
      role: 'primary',
      zone_text: zoneText(1, 'alias 300 IN CNAME www\n'),
    })
    assert.equal(res.status, 201)
    revision = (await json(res)).revision
  })
  after(() => h.close())

  async function unchanged() {
    const res = await h.call('GET', `/v1/zones/${ZONE}/rrsets`)
    assert.equal((await json(res)).revision, revision)
    assert.equal(await h.knot.soaSerial(ZONE), 1)
  }

  async function refuse(
    changes: unknown,
    status: number,
    code: string,
    message?: RegExp,
    headers: Record<string, string> = { 'if-match': `"${revision}"` },
    extra: Record<string, unknown> = {},
  ) {
    const res = await h.call('POST', `/v1/zones/${ZONE}/changes`, { changes, ...extra }, headers)
    const body = await json(res)
    assert.equal(res.status, status, JSON.stringify(body))
    assert.equal(body.error.code, code, JSON.stringify(body))
    if (message) assert.match(body.error.message, message)
    await unchanged()
  }

  const upsert = (name: string, type: string, records: string[], ttl: number = 300) => ({
    action: 'upsert',
    name,
    type,
    ttl,
    records,
  })

  test('revisions: missing 428, stale 412, disagreeing 400', async () => {
    const ok = [upsert('x', 'A', ['192.0.2.1'])]
    await refuse(ok, 428, 'revision_required', /If-Match or expected_revision/, {})
    await refuse(ok, 412, 'revision_mismatch', /is not current/, { 'if-match': '"stale"' })
    await refuse(ok, 412, 'revision_mismatch', undefined, {}, { expected_revision: 'stale' })
    await refuse(
      ok,
      400,
      'revision_disagreement',
      /name different revisions/,
      { 'if-match': `"${revision}"` },
      {
        expected_revision: 'other',
      },
    )
  })

  test('invalid TTLs', async () => {
    await refuse([upsert('x', 'A', ['192.0.2.1'], 2 ** 31)], 400, 'invalid_ttl', /0 to 2147483647/)
    await refuse([upsert('x', 'A', ['192.0.2.1'], -1)], 400, 'invalid_ttl')
    await refuse(
      [{ action: 'upsert', name: 'x', type: 'A', records: ['192.0.2.1'] }],
      400,
      'invalid_ttl',
      /needs a ttl/,
    )
    // An RRset keeps one TTL: an upsert replaces the whole RRset, so only the zone import can mix.
    const res = await h.call(
      'PUT',
      `/v1/zones/${ZONE}`,
      { role: 'primary', zone_text: zoneText(2, 'www 600 IN A 192.0.2.11\n') },
      { 'if-match': `"${revision}"` },
    )
    assert.equal(res.status, 400)
    assert.match((await json(res)).error.message, /TTLs 300 and 600/)
    await unchanged()
  })

  test('duplicate record values', async () => {
    await refuse([upsert('x', 'A', ['192.0.2.1', '192.0.2.1'])], 400, 'duplicate_record', /duplicate record x A/)
    await refuse([upsert('x', 'AAAA', ['2001:db8::1', '2001:DB8:0::1'])], 400, 'duplicate_record')
  })

  test('CNAME conflicts', async () => {
    await refuse([upsert('alias', 'A', ['192.0.2.1'])], 400, 'cname_conflict', /alias has a CNAME and A/)
    await refuse([upsert('www', 'CNAME', ['elsewhere.example.net.'])], 400, 'cname_conflict')
    await refuse([upsert('alias', 'CNAME', ['a', 'b'])], 400, 'cname_conflict', /more than one CNAME/)
  })

  test('direct SOA changes', async () => {
    await refuse(
      [upsert('@', 'SOA', ['ns1 hostmaster 99 3600 900 604800 300'])],
      400,
      'soa_change_forbidden',
      /serial advances/,
    )
    await refuse([{ action: 'delete', name: '@', type: 'SOA' }], 400, 'soa_change_forbidden')
  })

  test('apex NS violations', async () => {
    await refuse([{ action: 'delete', name: '@', type: 'NS' }], 400, 'apex_violation', /no NS records at its apex/)
  })

  test('invalid record syntax, unsupported types, names outside the zone', async () => {
    await refuse(
      [upsert('x', 'A', ['192.0.2.300'])],
      400,
      'invalid_record',
      /changes\[0\]\.records\[0\]: A record: invalid IPv4/,
    )
    await refuse([upsert('x', 'MX', ['10'])], 400, 'invalid_record', /preference and exchange/)
    await refuse([upsert('x', 'TXT', ['"a\nb"'])], 400, 'invalid_record', /single line/)
    // Over RDLENGTH's 65535 octets: Knot would refuse the file after the publication began.
    const long = Array(258)
      .fill(`"${'x'.repeat(254)}"`)
      .join(' ')
    await refuse([upsert('x', 'TXT', [long])], 400, 'invalid_record', /65790 octets of RDATA; the limit is 65535/)
    await refuse([upsert('x', 'PTR', ['host'])], 400, 'unsupported_type', /PTR is not supported/)
    await refuse([upsert('x', 'WHAT', ['1'])], 400, 'invalid_record', /unknown record type/)
    await refuse([upsert('www.example.org.', 'A', ['192.0.2.1'])], 400, 'name_outside_zone', /outside the zone/)
    await refuse([upsert('bad name', 'A', ['192.0.2.1'])], 400, 'invalid_record')
  })

  test('batch shape: repeated RRset, delete of an absent RRset, delete with records', async () => {
    await refuse([upsert('x', 'A', ['192.0.2.1']), upsert('X', 'A', ['192.0.2.2'])], 400, 'conflicting_changes')
    await refuse([{ action: 'delete', name: 'nothing', type: 'A' }], 409, 'rrset_not_found')
    await refuse([{ action: 'delete', name: 'www', type: 'A', records: ['192.0.2.10'] }], 400, 'invalid_record')
    await refuse([upsert('x', 'A', [])], 400, 'invalid_record', /at least one record/)
  })

  test('strict JSON: unknown fields, wrong types, empty batches, bad JSON', async () => {
    await refuse(
      [{ ...upsert('x', 'A', ['192.0.2.1']), comment: 'no' }],
      400,
      'invalid_request',
      /unknown field "comment"/,
    )
    await refuse([upsert('x', 'A', ['192.0.2.1'])], 400, 'invalid_request', /unknown field "force"/, undefined, {
      force: true,
    })
    await refuse([], 400, 'invalid_request')
    await refuse([{ action: 'replace', name: 'x', type: 'A' }], 400, 'invalid_request')
    await refuse([upsert('x', 'A', ['192.0.2.1'], 1.5)], 400, 'invalid_request')
    const res = await fetch(`${h.base}/v1/zones/${ZONE}/changes`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'if-match': `"${revision}"` },
      body: '{"changes": [',
    })
    assert.equal(res.status, 400)
    assert.equal((await json(res)).error.code, 'invalid_json')
    await unchanged()
  })

  test('zone text refusals on import: non-IN class, $INCLUDE, out-of-zone, two SOAs', async () => {
    const cases: [string, string][] = [
      ['www CH A 192.0.2.1\n', 'non_internet_class'],
      ['$INCLUDE /etc/hostname\n', 'include_refused'],
      ['x.example.org. A 192.0.2.1\n', 'name_outside_zone'],
      ['@ SOA ns1 hostmaster 5 3600 900 604800 300\n', 'apex_violation'],
      ['www A 192.0.2.10\n', 'duplicate_record'],
    ]
    for (const [extra, code] of cases) {
      const res = await h.call(
        'PUT',
        `/v1/zones/${ZONE}`,
        { role: 'primary', zone_text: zoneText(2, extra) },
        { 'if-match': `"${revision}"` },
      )
      const body = await json(res)
      assert.equal(res.status, 400, extra)
      assert.equal(body.error.code, code, JSON.stringify(body))
      assert.match(body.error.message, /^line \d+: /)
      await unchanged()
    }
  })

  test('arbitrary zone text over HTTP: a 2xx dry run or a coded 400, never a 5xx', async () => {
    const parts = [
      '@',
      'www',
      '$TTL',
      '$ORIGIN',
      '$INCLUDE',
      '(',
      ')',
      ';',
      '"',
      '\\',
      'IN',
      'CH',
      'A',
      'TXT',
      'SOA',
      'NS',
      '300',
      '1h',
      '\n',
      '192.0.2.1',
      'x.',
      '*',
    ]
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.array(fc.constantFrom(...parts), { maxLength: 40 }).map((p) => zoneText(3, `${p.join(' ')}\n`)),
          fc.string({ maxLength: 200 }),
        ),
        async (text) => {
          const res = await h.call(
            'PUT',
            `/v1/zones/${ZONE}`,
            { role: 'primary', zone_text: text, dry_run: true },
            { 'if-match': `"${revision}"` },
          )
          const body = await json(res)
          if (res.status === 200) assert.equal(body.dry_run, true)
          else {
            assert.equal(res.status, 400, JSON.stringify(body))
            assert.match(body.error.code, /^[a-z_]+$/)
            assert.ok(body.error.message.length > 0)
          }
        },
      ),
      { numRuns: 150 },
    )
    await unchanged()
  })

  test('unknown zones and bad zone names', async () => {
    let res = await h.call('GET', '/v1/zones/nothing.test/rrsets')
    assert.equal(res.status, 404)
    assert.equal((await json(res)).error.code, 'zone_not_found')
    res = await h.call(
      'POST',
      '/v1/zones/nothing.test/changes',
      { changes: [upsert('x', 'A', ['192.0.2.1'])] },
      { 'if-match': '"x"' },
    )
    assert.equal(res.status, 404)
    res = await h.call('GET', '/v1/zones/bad!zone/rrsets')
    assert.equal(res.status, 400)
    assert.equal((await json(res)).error.code, 'invalid_zone_name')
    res = await h.call('PUT', '/v1/zones/x.test', { role: 'primary', zone_text: zoneText() })
    assert.equal(res.status, 400, 'zone text for another origin')
    assert.equal((await json(res)).error.code, 'name_outside_zone')
    res = await h.call(
      'POST',
      `/v1/zones/${ZONE}/changes`,
      { changes: [upsert('x', 'A', ['192.0.2.1'])] },
      {
        'if-match': `"${revision}"`,
        'x-dns-actor': 'a'.repeat(200),
      },
    )
    assert.equal(res.status, 400)
    await unchanged()
  })
})
