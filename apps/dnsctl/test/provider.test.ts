/**
 * The external provider endpoints against a Cloudflare-style double run as a real HTTPS server,
 * with a real knotd as the zone's assigned nameserver: records and revisions, plans that write
 * nothing, confirmed changes in one batch verified at the API and by DNS, the safety guard, the
 * token file and permission checks, and the faults (stale revision, a delete failing halfway,
 * a slow API, wrong nameservers).
 */
import assert from 'node:assert/strict'
import { chmodSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, beforeEach, describe, test } from 'node:test'
import { createTestCa, type Knot, startKnot, type TestCa, tempDir } from '@gatehouse/testkit'
import { type Harness, json, startHarness } from './helpers.ts'
import { type DoubleRecord, type ProviderDouble, startProviderDouble } from './provider-double.ts'

const ZONE = 'shop.test'
const NS = ['127.0.0.1']
const BASE = `/v1/providers/extdns/zones/${ZONE}`

function records(): Omit<DoubleRecord, 'id'>[] {
  return [
    { name: ZONE, type: 'NS', content: 'ns1.provider.test', ttl: 86400 },
    { name: ZONE, type: 'NS', content: 'ns2.provider.test', ttl: 86400 },
    {
      name: `www.${ZONE}`,
      type: 'A',
      content: '192.0.2.10',
      ttl: 300,
      proxied: true,
      comment: 'web',
      tags: ['team:web'],
    },
    {
      name: `www.${ZONE}`,
      type: 'A',
      content: '192.0.2.11',
      ttl: 300,
      proxied: true,
      comment: 'web',
      tags: ['team:web'],
    },
    { name: ZONE, type: 'MX', content: `mail.${ZONE}`, priority: 10, ttl: 3600 },
    { name: `mail.${ZONE}`, type: 'A', content: '192.0.2.25', ttl: 3600 },
    { name: ZONE, type: 'TXT', content: '"v=spf1 mx -all"', ttl: 3600 },
    {
      name: `_sip._tcp.${ZONE}`,
      type: 'SRV',
      data: { priority: 10, weight: 5, port: 5060, target: `sip.${ZONE}` },
      ttl: 3600,
    },
    { name: ZONE, type: 'CAA', data: { flags: 0, tag: 'issue', value: 'letsencrypt.org' }, ttl: 3600 },
    { name: `old1.${ZONE}`, type: 'A', content: '192.0.2.31', ttl: 300 },
    { name: `old2.${ZONE}`, type: 'A', content: '192.0.2.32', ttl: 300 },
    { name: `old3.${ZONE}`, type: 'A', content: '192.0.2.33', ttl: 300 },
  ]
}

describe('external provider', () => {
  let ca: TestCa
  let knot: Knot
  let provider: ProviderDouble
  let h: Harness
  let tokenFile: string
  const dir = tempDir('dnsctl-provider-')

  before(async () => {
    ca = createTestCa()
    knot = await startKnot()
    provider = await startProviderDouble(ca, knot)
    tokenFile = join(dir.path, 'token')
    writeFileSync(tokenFile, 'edit-token\n', { mode: 0o600 })
    h = await startHarness({
      env: {
        DNSCTL_PROVIDER_ZONES: `${ZONE},missing.test`,
        DNSCTL_PROVIDER_TOKEN_FILE: tokenFile,
        DNSCTL_PROVIDER_API_URL: provider.url,
        DNSCTL_PROVIDER_CA_FILE: ca.caPath,
        DNSCTL_PROVIDER_TIMEOUT: '2s',
        DNSCTL_PROVIDER_DNS_PORT: String(knot.port),
        DNSCTL_PROVIDER_DNS_VERIFY_TIMEOUT: '1500ms',
        DNSCTL_PROVIDER_BATCH_LIMIT: '4',
      },
    })
  })

  beforeEach(async () => {
    provider.tokens.clear()
    provider.tokens.set('edit-token', new Set(['zone:read', 'dns:read', 'dns:edit']))
    provider.tokens.set('read-token', new Set(['zone:read', 'dns:read']))
    writeFileSync(tokenFile, 'edit-token\n')
    chmodSync(tokenFile, 0o600)
    provider.faults = {}
    provider.publishing = true
    const zone = provider.zones.get(ZONE)
    if (zone) provider.zones.delete(ZONE)
    await provider.addZone(ZONE, records(), NS)
  })

  after(async () => {
    await h?.close()
    await provider?.close()
    await knot?.stop()
    ca?.remove()
    dir.remove()
  })

  const read = async () => {
    const res = await h.call('GET', `${BASE}/records`)
    assert.equal(res.status, 200, await res.clone().text())
    return json(res)
  }
  const change = (revision: string, body: Record<string, unknown>) =>
    h.call(
      'POST',
      `${BASE}/changes`,
      { confirm: true, ...body },
      { 'if-match': `"${revision}"`, 'x-dns-actor': 'alice' },
    )
  const values = (name: string, type: string) =>
    [...(provider.zones.get(ZONE)?.records ?? [])]
      .filter((r) => r.name === name && r.type === type)
      .map((r) => r.content)
      .sort()

  test('allowlisted zones only; zone listing looks each up', async () => {
    const res = await h.call('GET', '/v1/providers/extdns/zones/other.test/records')
    assert.equal(res.status, 403)
    assert.equal((await json(res)).error.code, 'zone_not_allowed')
    const list = await json(await h.call('GET', '/v1/providers/extdns/zones'))
    assert.deepEqual(
      list.zones.map((z: { name: string; found: boolean }) => [z.name, z.found]),
      [
        ['missing.test', false],
        [ZONE, true],
      ],
    )
    const missing = await h.call('GET', '/v1/providers/extdns/zones/missing.test/records')
    assert.equal((await json(missing)).error.code, 'provider_zone_not_found')
  })

  test('records carry IDs, canonical content, attributes, and the revision in ETag and body', async () => {
    const res = await h.call('GET', `${BASE}/records`)
    const body = await json(res)
    assert.equal(res.headers.get('etag'), `"${body.revision}"`)
    const www = body.records.filter((r: { name: string }) => r.name === 'www')
    assert.equal(www.length, 2)
    assert.deepEqual(
      { ...www[0], id: undefined },
      {
        id: undefined,
        name: 'www',
        type: 'A',
        ttl: 300,
        content: '192.0.2.10',
        proxied: true,
        comment: 'web',
        tags: ['team:web'],
      },
    )
    const contents = body.records.map((r: { type: string; content: string }) => `${r.type} ${r.content}`)
    assert.ok(contents.includes(`MX 10 mail.${ZONE}.`))
    assert.ok(contents.includes(`SRV 10 5 5060 sip.${ZONE}.`))
    assert.ok(contents.includes('CAA 0 issue "letsencrypt.org"'))
    assert.ok(contents.includes('TXT "v=spf1 mx -all"'))
  })

  test('a plan names exact record-ID deletes and proposed creates and writes nothing', async () => {
    const { revision, records: before } = await read()
    const body = { changes: [{ action: 'upsert', name: 'www', type: 'A', records: ['192.0.2.10', '192.0.2.12'] }] }
    assert.equal((await h.call('POST', `${BASE}/plans`, body)).status, 428)
    const batches = provider.calls.batch
    const res = await h.call('POST', `${BASE}/plans`, body, { 'if-match': `"${revision}"` })
    assert.equal(res.status, 200, await res.clone().text())
    const plan = await json(res)
    const old = before.find((r: { content: string }) => r.content === '192.0.2.11')
    assert.deepEqual(plan.plan.deletes, [{ id: old.id, name: 'www', type: 'A', ttl: 300, content: '192.0.2.11' }])
    assert.deepEqual(plan.plan.creates, [
      { name: 'www', type: 'A', ttl: 300, content: '192.0.2.12', proxied: true, comment: 'web', tags: ['team:web'] },
    ])
    assert.deepEqual(plan.plan.updates, [])
    assert.equal(plan.safety.safe, true)
    assert.equal(provider.calls.batch, batches)
    assert.equal((await read()).revision, revision)
    const unconfirmed = await h.call('POST', `${BASE}/changes`, body, { 'if-match': `"${revision}"` })
    assert.equal((await json(unconfirmed)).error.code, 'confirm_required')
  })

  test('a confirmed change is one batch, verified at the API and at the nameservers, and audited', async () => {
    const { revision } = await read()
    const batches = provider.calls.batch ?? 0
    const res = await change(revision, {
      changes: [
        { action: 'upsert', name: 'www', type: 'A', records: ['192.0.2.10', '192.0.2.12'] },
        { action: 'upsert', name: 'api', type: 'A', ttl: 120, records: ['192.0.2.50'] },
        { action: 'upsert', name: 'mail', type: 'A', ttl: 600, records: ['192.0.2.25'], comment: 'mx host' },
      ],
    })
    assert.equal(res.status, 200, await res.clone().text())
    const out = await json(res)
    assert.equal(provider.calls.batch, batches + 1)
    assert.deepEqual(out.batch, { deletes: 1, updates: 1, creates: 2, requests: 1 })
    assert.equal(out.applied, true)
    assert.equal(out.api_verified, true)
    assert.equal(out.dns_verified, true)
    assert.deepEqual(out.warnings, [])
    assert.deepEqual(values(`www.${ZONE}`, 'A'), ['192.0.2.10', '192.0.2.12'])
    const www = provider.zones.get(ZONE)!.records.find((r) => r.content === '192.0.2.12')!
    assert.equal(www.proxied, true, 'uniform attributes are preserved on new records')
    assert.equal(www.comment, 'web')
    const mail = provider.zones.get(ZONE)!.records.find((r) => r.name === `mail.${ZONE}`)!
    assert.deepEqual([mail.ttl, mail.comment], [600, 'mx host'])
    assert.match(await knot.kdig('+short', `api.${ZONE}`, 'A'), /192\.0\.2\.50/)
    assert.equal((await read()).revision, out.revision)
    const again = await json(
      await h.call(
        'POST',
        `${BASE}/plans`,
        { changes: [{ action: 'upsert', name: 'www', type: 'A', records: ['192.0.2.10', '192.0.2.12'] }] },
        { 'if-match': `"${out.revision}"` },
      ),
    )
    assert.deepEqual(again.summary, { deletes: 0, updates: 0, creates: 0, existing_records: 13 })
    const auditRes = await h.call('GET', `${BASE}/audit`)
    const audit = await json(auditRes)
    assert.ok(audit.events, JSON.stringify(audit))
    assert.equal(audit.events[0].outcome, 'committed')
    assert.equal(audit.events[0].actor, 'alice')
  })

  test('a change larger than the batch limit goes in several requests, in order', async () => {
    const { revision } = await read()
    const batches = provider.calls.batch ?? 0
    const names = ['n1', 'n2', 'n3', 'n4', 'n5']
    const res = await change(revision, {
      changes: [
        { action: 'delete', name: 'old1', type: 'A' },
        ...names.map((name) => ({ action: 'upsert', name, type: 'A', records: ['192.0.2.60'] })),
      ],
    })
    assert.equal(res.status, 200, await res.clone().text())
    const out = await json(res)
    assert.deepEqual(out.batch, { deletes: 1, updates: 0, creates: 5, requests: 2 })
    assert.equal(provider.calls.batch, batches + 2)
    assert.equal(out.dns_verified, true)
    for (const name of names) assert.deepEqual(values(`${name}.${ZONE}`, 'A'), ['192.0.2.60'])
  })

  test('a stale revision is refused and nothing is written', async () => {
    const { revision } = await read()
    provider.zones
      .get(ZONE)!
      .records.push({ id: 'concurrent', name: `x.${ZONE}`, type: 'A', content: '192.0.2.99', ttl: 300 })
    const batches = provider.calls.batch
    const res = await change(revision, { changes: [{ action: 'delete', name: 'old1', type: 'A' }] })
    assert.equal(res.status, 412)
    assert.equal((await json(res)).error.code, 'revision_mismatch')
    assert.equal(provider.calls.batch, batches)
  })

  test('safety: more than 30% deleted, or the apex NS set touched, needs force', async () => {
    const { revision } = await read()
    const del = ['old1', 'old2', 'old3', 'mail'].map((name) => ({ action: 'delete', name, type: 'A' }))
    const refused = await change(revision, { changes: del })
    assert.equal(refused.status, 409)
    const err = (await json(refused)).error
    assert.equal(err.code, 'unsafe_change')
    assert.match(err.message, /deletes 4 of 12 records/)
    const ns = await change(revision, {
      changes: [{ action: 'upsert', name: '@', type: 'NS', records: ['ns3.provider.test.'] }],
    })
    assert.match((await json(ns)).error.message, /apex NS/)
    const plan = await json(await h.call('POST', `${BASE}/plans`, { changes: del }, { 'if-match': `"${revision}"` }))
    assert.equal(plan.safety.force_required, true)
    const forced = await change(revision, { changes: del, force: true })
    assert.equal(forced.status, 200, await forced.clone().text())
    assert.deepEqual(values(`old1.${ZONE}`, 'A'), [])
  })

  test('a token without DNS edit permission: plans work, a change names the missing permission', async () => {
    writeFileSync(tokenFile, 'read-token\n')
    const { revision } = await read()
    const body = { changes: [{ action: 'delete', name: 'old1', type: 'A' }] }
    assert.equal((await h.call('POST', `${BASE}/plans`, body, { 'if-match': `"${revision}"` })).status, 200)
    const res = await change(revision, body)
    assert.equal(res.status, 403)
    const err = (await json(res)).error
    assert.equal(err.code, 'provider_permission_missing')
    assert.match(err.message, /DNS Edit/)
    assert.deepEqual(values(`old1.${ZONE}`, 'A'), ['192.0.2.31'])

    provider.tokens.set('zone-only', new Set(['zone:read']))
    writeFileSync(tokenFile, 'zone-only\n')
    const noRead = await h.call('GET', `${BASE}/records`)
    assert.equal(noRead.status, 403)
    assert.match((await json(noRead)).error.message, /DNS Read/)
  })

  test('a token file others can read is refused', async () => {
    chmodSync(tokenFile, 0o644)
    const res = await h.call('GET', `${BASE}/records`)
    assert.equal(res.status, 503)
    const err = (await json(res)).error
    assert.equal(err.code, 'provider_token_unsafe')
    assert.doesNotMatch(err.message, /edit-token/)
  })

  test('a delete failing halfway is rolled back by a compensating batch', async () => {
    const { revision } = await read()
    provider.faults.failDeleteAt = 2
    const res = await change(revision, {
      changes: [
        { action: 'delete', name: 'old1', type: 'A' },
        { action: 'delete', name: 'old2', type: 'A' },
        { action: 'upsert', name: 'new', type: 'A', records: ['192.0.2.77'] },
      ],
    })
    assert.equal(res.status, 502)
    const err = (await json(res)).error
    assert.equal(err.code, 'provider_change_failed')
    assert.match(err.message, /compensating rollback restored/)
    provider.faults = {}
    assert.deepEqual(values(`old1.${ZONE}`, 'A'), ['192.0.2.31'])
    assert.deepEqual(values(`old2.${ZONE}`, 'A'), ['192.0.2.32'])
    assert.deepEqual(values(`new.${ZONE}`, 'A'), [])
    const auditRes = await h.call('GET', `${BASE}/audit`)
    const audit = await json(auditRes)
    assert.ok(audit.events, JSON.stringify(audit))
    assert.equal(audit.events[0].outcome, 'rolled_back')
    const metrics = await (await h.call('GET', '/metrics')).text()
    assert.match(metrics, /^dnsctl_provider_changes_total\{outcome="rolled_back"\} 1$/m)
  })

  test('a batch that answers success but differs is caught by the re-plan and rolled back', async () => {
    const { revision } = await read()
    provider.faults.dropPosts = true
    const res = await change(revision, {
      changes: [{ action: 'upsert', name: 'www', type: 'A', records: ['192.0.2.10', '192.0.2.13'] }],
    })
    assert.equal(res.status, 502)
    assert.match((await json(res)).error.message, /state differs after the batch: www A 192\.0\.2\.13 missing/)
    provider.faults = {}
    assert.deepEqual(values(`www.${ZONE}`, 'A'), ['192.0.2.10', '192.0.2.11'])
  })

  test('a read whose connection is reset is sent again once; a second reset, or a reset write, is an error', async () => {
    provider.faults.resets = 1
    const ok = await h.call('GET', `${BASE}/records`)
    assert.equal(ok.status, 200, await ok.clone().text())
    provider.faults.resets = 2
    const twice = await h.call('GET', `${BASE}/records`)
    assert.equal(twice.status, 502, await twice.clone().text())
    assert.match((await json(twice)).error.message, /the provider API is unreachable/)
    provider.faults = {}
    const { revision } = await read()
    provider.faults.writeResets = 1
    const resets = provider.calls.reset ?? 0
    const write = await change(revision, {
      changes: [{ action: 'upsert', name: 'reset', type: 'A', records: ['192.0.2.99'] }],
    })
    provider.faults = {}
    assert.notEqual(write.status, 200)
    assert.equal(provider.calls.reset, resets + 1)
    assert.deepEqual(values(`reset.${ZONE}`, 'A'), [], 'a write is not sent twice')
  })

  test('a slow provider API answers 504 provider_timeout', async () => {
    provider.faults.delayMs = 3000
    const res = await h.call('GET', `${BASE}/records`)
    assert.equal(res.status, 504, await res.clone().text())
    assert.equal((await json(res)).error.code, 'provider_timeout')
  })

  test('wrong or lagging nameservers: dns_verified false with a warning, no rollback', async () => {
    provider.publishing = false
    const { revision } = await read()
    const res = await change(revision, {
      changes: [{ action: 'upsert', name: 'lag', type: 'A', records: ['192.0.2.88'] }],
    })
    assert.equal(res.status, 200, await res.clone().text())
    const out = await json(res)
    assert.equal(out.dns_verified, false)
    assert.match(out.warnings[0], /propagation lag/)
    assert.deepEqual(values(`lag.${ZONE}`, 'A'), ['192.0.2.88'])

    provider.publishing = true
    provider.zones.get(ZONE)!.name_servers = ['127.0.0.2']
    const next = await change(out.revision, { changes: [{ action: 'delete', name: 'lag', type: 'A' }] })
    const out2 = await json(next)
    assert.equal(out2.dns_verified, false)
    // knotd listens on 127.0.0.1 only: at 127.0.0.2 the port refuses, which is a nameserver that
    // is not running, said so at once (not lag waited out until the deadline).
    assert.match(
      out2.warnings[0],
      /^not verified by DNS: the assigned nameservers are not running \(127\.0\.0\.2 did not answer lag\.shop\.test A: 127\.0\.0\.2:\d+ refused the query: nothing listens there/,
    )
    assert.deepEqual(values(`lag.${ZONE}`, 'A'), [], 'the delete is applied at the provider, not rolled back')
  })

  test('the allowlist: validate (dry run), commit with the revision, list revisions', async () => {
    const current = await json(await h.call('GET', '/v1/providers/extdns/allowlist'))
    assert.equal(current.source, 'environment')
    const dry = await json(
      await h.call('PUT', '/v1/providers/extdns/allowlist', { zones: [ZONE, 'Nope.Test.'], dry_run: true }),
    )
    assert.deepEqual(
      dry.validation.map((v: { zone: string; found: boolean }) => [v.zone, v.found]),
      [
        ['nope.test', false],
        [ZONE, true],
      ],
    )
    assert.equal((await h.call('PUT', '/v1/providers/extdns/allowlist', { zones: [ZONE] })).status, 428)
    const bad = await h.call('PUT', '/v1/providers/extdns/allowlist', { zones: ['bad zone'], dry_run: true })
    assert.equal((await json(bad)).error.code, 'invalid_allowlist')
    const res = await h.call(
      'PUT',
      '/v1/providers/extdns/allowlist',
      { zones: [ZONE] },
      { 'if-match': `"${current.revision}"` },
    )
    assert.equal(res.status, 200, await res.clone().text())
    const committed = await json(await h.call('GET', '/v1/providers/extdns/allowlist'))
    assert.deepEqual([committed.source, committed.zones], ['committed', [ZONE]])
    assert.equal((await h.call('GET', '/v1/providers/extdns/zones/missing.test/records')).status, 403)
    const revs = await json(await h.call('GET', '/v1/providers/extdns/allowlist/revisions'))
    assert.equal(revs.revisions.length, 1)
  })
})
