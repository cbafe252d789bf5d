/** Plans, the safety guard and the rollback plan, as pure functions (the HTTP paths are in provider.test.ts). */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { splitBatch } from '../src/provider/batch.ts'
import { inversePlan, isEmpty, planChanges, safetyReasons, touchedRRsets } from '../src/provider/plan.ts'
import { fromApi, type ProviderRecord, revisionOf, toApi } from '../src/provider/records.ts'

const Z = 'example.com'

function rec(
  id: string,
  name: string,
  type: ProviderRecord['type'],
  value: string,
  extra: Partial<ProviderRecord> = {},
) {
  return { id, name, type, ttl: 300, value, proxied: false, comment: null, tags: [], ...extra } satisfies ProviderRecord
}

describe('provider plans', () => {
  test('attributes shared by the RRset are kept; differing ones stay per record; overrides win', () => {
    const current = [
      rec('1', 'www', 'A', '192.0.2.1', { proxied: true, comment: 'a', tags: ['x'] }),
      rec('2', 'www', 'A', '192.0.2.2', { proxied: true, comment: 'b', tags: ['x'] }),
    ]
    const plan = planChanges(Z, current, [
      { action: 'upsert', name: 'www', type: 'A', records: ['192.0.2.2', '192.0.2.3'] },
    ])
    assert.deepEqual(
      plan.deletes.map((r) => r.id),
      ['1'],
    )
    assert.deepEqual(plan.updates, [])
    // proxied and tags are uniform, the comment is not: a new record gets no comment.
    assert.deepEqual(plan.creates, [
      { name: 'www', type: 'A', value: '192.0.2.3', ttl: 300, proxied: true, comment: null, tags: ['x'] },
    ])
    const override = planChanges(Z, current, [
      { action: 'upsert', name: 'www', type: 'A', records: ['192.0.2.1', '192.0.2.2'], comment: 'web', proxied: false },
    ])
    assert.equal(override.updates.length, 2)
    assert.deepEqual(override.updates[0]!.to, { ttl: 300, proxied: false, comment: 'web', tags: ['x'] })
  })

  test('values are compared canonically; an upsert without ttl keeps the RRset TTL', () => {
    const current = [rec('1', '@', 'MX', '10 mail.example.com.', { ttl: 3600 })]
    // Names in values follow the zone API: absolute with the trailing dot, else relative to the zone.
    for (const written of ['10 MAIL.example.com.', '10 mail']) {
      const same = planChanges(Z, current, [{ action: 'upsert', name: '@', type: 'mx', records: [written] }])
      assert.ok(isEmpty(same), written)
    }
    const ttl = planChanges(Z, current, [
      { action: 'upsert', name: '@', type: 'MX', ttl: 60, records: ['10 mail.example.com.'] },
    ])
    assert.deepEqual(
      ttl.updates.map((u) => [u.from.ttl, u.to.ttl]),
      [[3600, 60]],
    )
  })

  test('bad input is a coded error', () => {
    const bad: [unknown, string][] = [
      [{ action: 'upsert', name: 'a', type: 'MX', records: ['10 x.'], proxied: true }, 'invalid_record'],
      [{ action: 'upsert', name: 'a', type: 'A', records: ['192.0.2.1', '192.0.2.1'] }, 'duplicate_record'],
      [{ action: 'upsert', name: 'a', type: 'CNAME', records: ['b.', 'c.'] }, 'cname_conflict'],
      [{ action: 'upsert', name: 'a', type: 'A', records: ['not-an-ip'] }, 'invalid_record'],
      [{ action: 'upsert', name: 'a', type: 'SOA', records: ['x'] }, 'unsupported_type'],
      [{ action: 'upsert', name: 'a', type: 'A', records: [] }, 'invalid_record'],
      [{ action: 'delete', name: 'nothing', type: 'A' }, 'rrset_not_found'],
      [{ action: 'upsert', name: 'a.example.org.', type: 'A', records: ['192.0.2.1'] }, 'name_outside_zone'],
    ]
    for (const [change, code] of bad) {
      assert.throws(
        () => planChanges(Z, [], [change as never]),
        (err: { code?: string }) => err.code === code,
        `${JSON.stringify(change)} -> ${code}`,
      )
    }
    assert.throws(
      () =>
        planChanges(
          Z,
          [],
          [
            { action: 'upsert', name: 'a', type: 'A', records: ['192.0.2.1'] },
            { action: 'upsert', name: 'a', type: 'a', records: ['192.0.2.2'] },
          ],
        ),
      (err: { code?: string }) => err.code === 'conflicting_changes',
    )
  })

  test('safety: 30% of at least 10 records, or the apex NS set', () => {
    const zone = Array.from({ length: 10 }, (_, i) => rec(String(i), `h${i}`, 'A', `192.0.2.${i + 1}`))
    const three = planChanges(
      Z,
      zone,
      [0, 1, 2].map((i) => ({ action: 'delete' as const, name: `h${i}`, type: 'A' })),
    )
    assert.deepEqual(safetyReasons(three, zone.length), [])
    const four = planChanges(
      Z,
      zone,
      [0, 1, 2, 3].map((i) => ({ action: 'delete' as const, name: `h${i}`, type: 'A' })),
    )
    assert.match(safetyReasons(four, zone.length)[0]!, /deletes 4 of 10/)
    const small = zone.slice(0, 9)
    const most = planChanges(
      Z,
      small,
      [0, 1, 2, 3, 4].map((i) => ({ action: 'delete' as const, name: `h${i}`, type: 'A' })),
    )
    assert.deepEqual(safetyReasons(most, small.length), [], 'zones under 10 records are not guarded by share')
    const ns = planChanges(Z, [], [{ action: 'upsert', name: '@', type: 'NS', records: ['ns1.example.net.'] }])
    assert.deepEqual(safetyReasons(ns, 0), ['touches the apex NS set'])
  })

  test('the inverse plan restores the touched RRsets', () => {
    const before = [
      rec('1', 'a', 'A', '192.0.2.1'),
      rec('2', 'a', 'A', '192.0.2.2', { comment: 'keep' }),
      rec('3', 'b', 'A', '192.0.2.9'),
    ]
    const changes = [
      { action: 'upsert' as const, name: 'a', type: 'A', records: ['192.0.2.2', '192.0.2.3'], comment: 'new' },
    ]
    const plan = planChanges(Z, before, changes)
    const touched = touchedRRsets(plan, changes, Z)
    const after = [
      rec('2', 'a', 'A', '192.0.2.2', { comment: 'new' }),
      rec('9', 'a', 'A', '192.0.2.3', { comment: 'new' }),
      before[2]!,
    ]
    const undo = inversePlan(before, after, touched)
    assert.deepEqual(
      undo.deletes.map((r) => r.id),
      ['9'],
    )
    assert.deepEqual(
      undo.updates.map((u) => [u.id, u.to.comment]),
      [['2', 'keep']],
    )
    assert.deepEqual(
      undo.creates.map((c) => c.value),
      ['192.0.2.1'],
    )
    assert.ok(isEmpty(inversePlan(before, before, touched)))
  })

  test('API records round-trip through the canonical form; the revision sees every attribute', () => {
    const api = [
      { id: 'a', name: 'example.com', type: 'MX', content: 'mail.example.com', priority: 10, ttl: 1 },
      {
        id: 'b',
        name: '_s._tcp.example.com',
        type: 'SRV',
        data: { priority: 1, weight: 2, port: 443, target: 't.example.com' },
        ttl: 60,
      },
      { id: 'c', name: 'example.com', type: 'CAA', data: { flags: 0, tag: 'issue', value: 'ca.example' }, ttl: 60 },
      { id: 'd', name: 'txt.example.com', type: 'TXT', content: 'hello "world"', ttl: 60 },
      { id: 'e', name: 'example.com', type: 'SOA', content: 'ignored', ttl: 60 },
    ]
    const records = api.map((r) => fromApi(r, Z)).filter((r) => r !== undefined)
    assert.deepEqual(
      records.map((r) => `${r.name} ${r.type} ${r.value}`),
      [
        '@ MX 10 mail.example.com.',
        '_s._tcp SRV 1 2 443 t.example.com.',
        '@ CAA 0 issue "ca.example"',
        'txt TXT "hello \\"world\\""',
      ],
    )
    for (const r of records) {
      const back = fromApi({ id: r.id, ttl: r.ttl, ...(toApi(Z, r) as { name: string; type: string }) }, Z)
      assert.equal(back?.value, r.value)
    }
    const rev = revisionOf(records)
    assert.notEqual(revisionOf(records.map((r, i) => (i === 0 ? { ...r, comment: 'x' } : r))), rev)
    assert.equal(revisionOf([...records].reverse()), rev)
  })

  test('a batch splits into requests of at most the limit, deletes first and posts last', () => {
    const batch = {
      deletes: [{ id: 'd1' }, { id: 'd2' }, { id: 'd3' }],
      patches: [{ id: 'p1' }],
      posts: [{ name: 'a' }, { name: 'b' }],
    }
    const parts = splitBatch(batch, 4)
    assert.deepEqual(parts, [
      { deletes: [{ id: 'd1' }, { id: 'd2' }, { id: 'd3' }], patches: [{ id: 'p1' }], posts: [] },
      { deletes: [], patches: [], posts: [{ name: 'a' }, { name: 'b' }] },
    ])
    assert.deepEqual(splitBatch(batch, 100), [batch])
    assert.deepEqual(splitBatch({ deletes: [], patches: [], posts: [] }, 5), [])
  })
})
