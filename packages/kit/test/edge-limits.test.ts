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

  test('sightings: the same result as the rule written plainly (a map by pair, then one sort)', () => {
    // The rule as it was first written; the kit's version keys pairs by number and merges
    // ordered runs instead of sorting, and must not change a single result.
    type R = S & { tag: number }
    const plainly = (a: readonly R[], b: readonly R[], cutoff: number): R[] => {
      const byPair = new Map<string, { s: R; t: number }>()
      for (const s of [...a, ...b]) {
        if (!(s.t >= cutoff)) continue
        const prev = byPair.get(`${s.ip}|${s.port}`)
        if (!prev || prev.t <= s.t) byPair.set(`${s.ip}|${s.port}`, { s, t: s.t })
      }
      const out = [...byPair.values()].sort((x, y) => y.t - x.t || compareIps(x.s.ip, y.s.ip) || x.s.port - y.s.port)
      return out.slice(0, EDGE_LIMITS.perFingerprint).map((x) => x.s)
    }
    // Three kinds of lists: as gates report them (dotted quads, ports in range: numeric keys);
    // with addresses that are one address in two texts, texts that are no address, ports out of
    // range or not integers (text keys, pairs that compare equal); and from a few values, so
    // the same pair and instant, and equal-comparing pairs, meet across the two lists.
    const odd = fc.constantFrom('::1', '0::1', '::ffff:10.0.0.1', '10.0.0.01', 'junk', ' 10.0.0.1')
    const oddPort = fc.oneof(fc.integer({ min: 1, max: 4 }), fc.constantFrom(0, 65535, 65536, -1, 2.5))
    const t = fc.integer({ min: 0, max: 6 })
    const tag = fc.nat()
    const kinds = [
      fc.record({ ip: ipv4, port: fc.integer({ min: 0, max: 65535 }), t, tag }),
      fc.record({ ip: fc.oneof(ipv4, ipv6, odd), port: oddPort, t, tag }),
      fc.record({
        ip: fc.constantFrom('::1', '0::1', '10.0.0.1', '10.0.0.2'),
        port: fc.constantFrom(1, 2),
        t: fc.integer({ min: 0, max: 1 }),
        tag,
      }),
    ]
    for (const kind of kinds) {
      // Lists as stored (already merged: ordered runs) and as they arrive (any order, repeats).
      const arriving = fc.array(kind, { maxLength: 200 })
      const stored = arriving.map((xs) => plainly(xs, [], Number.NEGATIVE_INFINITY))
      const anyList = fc.oneof(stored, arriving)
      fc.assert(
        fc.property(anyList, anyList, fc.integer({ min: -1, max: 4 }), (a, b, cutoff) => {
          assert.deepEqual(mergeSightingLists(a, b, time, cutoff), plainly(a, b, cutoff))
          assert.deepEqual(mergeSightingLists(a, b, time), plainly(a, b, Number.NEGATIVE_INFINITY))
        }),
        { numRuns: 300 },
      )
    }
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
    // A set as a gate keeps it (already in order, maybe repeating a value) merged into nothing.
    fc.assert(
      fc.property(fc.array(ip, { maxLength: 300 }), fc.array(fc.nat(65535), { maxLength: 300 }), (x, p) => {
        for (const xs of [x, [...x].sort(compareIps), [...new Set(x)].sort(compareIps)])
          assert.deepEqual(mergeIpSet([], xs), [...new Set(xs)].sort(compareIps).slice(0, EDGE_LIMITS.perFingerprint))
        for (const ps of [p, [...p].sort((a, b) => a - b), [...new Set(p)].sort((a, b) => a - b)])
          assert.deepEqual(
            mergePortSet([], ps),
            [...new Set(ps)].sort((a, b) => a - b).slice(0, EDGE_LIMITS.perFingerprint),
          )
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
