/**
 * The one merge rule of a fingerprint's sets (kit edge-limits.ts), used by the SSH gate's store
 * and the control plane: joins (order of merging does not matter), bounded to 128, and one tie
 * rule at the cut (same instant: IP order, then port).
 */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { compareIps, EDGE_LIMITS, mergeIpSet, mergePortSet, mergeSightingLists } from '../src/edge-limits.ts'

interface S {
  ip: string
  port: number
  t: number
}
const time = (s: S) => s.t
const ipv4 = fc.tuple(fc.nat(3), fc.nat(255)).map(([a, b]) => `10.0.${a}.${b}`)
const ipv6 = fc.nat(300).map((n) => `2001:db8::${n.toString(16)}`)
const ip = fc.oneof(ipv4, ipv6)
const sighting = fc.record({ ip, port: fc.integer({ min: 1, max: 4 }), t: fc.integer({ min: 0, max: 3 }) })
// Equal keys must carry equal values for a join: a pair at an instant is one sighting.
const list = fc.array(sighting, { maxLength: 200 })
const canon = (xs: S[]) => xs.map((s) => `${s.ip}|${s.port}|${s.t}`)

describe('edge merge rules', () => {
  test('compareIps: IPv4 before IPv6, numeric; other text last', () => {
    assert.deepEqual(['::1', 'junk', '10.0.0.2', '9.0.0.1', '2001:db8::1'].sort(compareIps), [
      '9.0.0.1',
      '10.0.0.2',
      '::1',
      '2001:db8::1',
      'junk',
    ])
  })

  test('compareIps: dotted quads by value; with any other text, one total order', () => {
    const value = (a: string) => a.split('.').reduce((v, o) => v * 256 + Number(o), 0)
    fc.assert(
      fc.property(fc.ipV4(), fc.ipV4(), (a, b) => {
        assert.equal(Math.sign(compareIps(a, b)), Math.sign(value(a) - value(b)))
      }),
    )
    // Texts near a dotted quad are not one (leading zeros, octets past 255, missing parts): they
    // sort as the address parser reads them, or last as text.
    const near = ['1.2.3.04', '01.2.3.4', '1.2.3.256', '1.2.3', '1.2.3.4.5', '1..3.4', '.1.2.3', ' 1.2.3.4']
    const anyText = fc.oneof(
      fc.ipV4(),
      fc.ipV4Extended(),
      fc.ipV6(),
      fc.string({ maxLength: 16 }),
      fc.constantFrom(...near),
    )
    fc.assert(
      fc.property(fc.array(anyText, { maxLength: 30 }), (xs) => {
        const sorted = [...xs].sort(compareIps)
        assert.deepEqual([...xs].reverse().sort(compareIps), sorted)
        for (let i = 1; i < sorted.length; i++) assert.ok(compareIps(sorted[i - 1]!, sorted[i]!) <= 0)
        for (const x of xs)
          for (const y of xs) assert.equal(Math.sign(compareIps(x, y)) + Math.sign(compareIps(y, x)), 0)
      }),
    )
    // None of them an address to the parser either (' 1.2.3.4' is, trimmed): text, after every address.
    for (const text of near.filter((t) => t !== ' 1.2.3.4')) assert.ok(compareIps(text, '::') > 0, text)
    assert.deepEqual(
      ['10.0.0.1', '9.255.255.255', '0.0.0.0', '255.255.255.255', '1.2.3.04'].sort(compareIps).slice(0, 4),
      ['0.0.0.0', '9.255.255.255', '10.0.0.1', '255.255.255.255'],
    )
  })

  test('a tie at the cut keeps the same 128 whatever the order of arrival', () => {
    const all: S[] = []
    for (let i = 0; i < 130; i++) all.push({ ip: `192.0.2.${i + 1}`, port: 22, t: 1000 })
    const forward = mergeSightingLists(all.slice(0, 65), all.slice(65), time)
    const backward = mergeSightingLists([...all].reverse().slice(0, 65), [...all].reverse().slice(65), time)
    assert.equal(forward.length, EDGE_LIMITS.perFingerprint)
    assert.deepEqual(canon(forward), canon(backward))
    assert.equal(forward.at(-1)!.ip, '192.0.2.128', 'the highest addresses are the ones cut')
    const newer = mergeSightingLists(all, [{ ip: '192.0.2.200', port: 22, t: 1001 }], time)
    assert.equal(newer[0]!.ip, '192.0.2.200', 'newest first')
  })

  test('same pair at the same instant: the later report wins; older than the cutoff: dropped', () => {
    const a = [{ ip: '192.0.2.1', port: 22, t: 5, relay: 1 }]
    const b = [{ ip: '192.0.2.1', port: 22, t: 5, relay: 2 }]
    assert.equal(mergeSightingLists(a, b, time)[0]!.relay, 2)
    assert.equal(mergeSightingLists(b, [{ ip: '192.0.2.1', port: 22, t: 4, relay: 3 }], time)[0]!.relay, 2)
    assert.deepEqual(mergeSightingLists(a, [{ ip: '192.0.2.2', port: 22, t: 9, relay: 0 }], time, 6).length, 1)
  })

  test('properties: sightings, IPs and ports merge as joins, bounded to 128', () => {
    fc.assert(
      fc.property(list, list, list, (x, y, z) => {
        const m = (p: S[], q: S[]) => mergeSightingLists(p, q, time)
        const xy = m(x, y)
        assert.ok(xy.length <= EDGE_LIMITS.perFingerprint)
        assert.deepEqual(canon(xy), canon(m(y, x)), 'commutative')
        assert.deepEqual(canon(m(xy, z)), canon(m(x, m(y, z))), 'associative')
        assert.deepEqual(canon(m(xy, xy)), canon(xy), 'idempotent')
      }),
      { numRuns: 200 },
    )
    fc.assert(
      fc.property(fc.array(ip, { maxLength: 300 }), fc.array(ip, { maxLength: 300 }), (x, y) => {
        const xy = mergeIpSet(x, y)
        assert.ok(xy.length <= EDGE_LIMITS.perFingerprint)
        assert.deepEqual(xy, mergeIpSet(y, x))
        assert.deepEqual(mergeIpSet(xy, x), xy)
        assert.deepEqual(xy, [...new Set([...x, ...y])].sort(compareIps).slice(0, EDGE_LIMITS.perFingerprint))
      }),
    )
    fc.assert(
      fc.property(fc.array(fc.nat(65535), { maxLength: 300 }), fc.array(fc.nat(65535), { maxLength: 300 }), (x, y) => {
        assert.deepEqual(mergePortSet(x, y), mergePortSet(y, x))
        assert.ok(mergePortSet(x, y).length <= EDGE_LIMITS.perFingerprint)
      }),
    )
  })
})
