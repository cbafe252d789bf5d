import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { AppError } from '@gatehouse/kit'
import fc from 'fast-check'
import { parseZone, renderZone, validateZone } from '../src/zonefile/index.ts'
import { applyChanges, type RRsetChange } from '../src/zones/changes.ts'
import { sameRecordsBesidesSerial, withSerial } from '../src/zones/model.ts'
import { zoneText } from './helpers.ts'

const zone = parseZone(zoneText(1, 'mail 300 IN MX 10 www\n'), { origin: 'example.test.' })

describe('RRset changes in memory', () => {
  test('upsert replaces the RRset, delete removes it, relative names and @ resolve against the zone', () => {
    const next = applyChanges(zone, [
      { action: 'upsert', name: 'www', type: 'A', ttl: 60, records: ['192.0.2.1', '192.0.2.2'] },
      { action: 'upsert', name: '@', type: 'MX', ttl: 300, records: ['10 @', '20 mail.example.net.'] },
      { action: 'upsert', name: 'txt.example.test.', type: 'TXT', ttl: 60, records: ['"a b" c'] },
      { action: 'delete', name: 'mail', type: 'MX' },
    ])
    validateZone(next)
    const text = renderZone(next)
    assert.match(text, /^www 60 IN A 192\.0\.2\.1\nwww 60 IN A 192\.0\.2\.2$/m)
    assert.match(text, /^@ 300 IN MX 10 example\.test\.\n@ 300 IN MX 20 mail\.example\.net\.$/m)
    assert.match(text, /^txt 60 IN TXT "a b" "c"$/m)
    assert.doesNotMatch(text, /^mail /m)
    assert.equal(renderZone(zone).includes('mail 300 IN MX'), true, 'the input zone is not changed')
  })

  test('unchanged: the same records whatever the SOA serial; any other SOA field, TTL or record is a change', () => {
    const parse = (text: string) => parseZone(text, { origin: 'example.test.' })
    const extra = 'mail 300 IN MX 10 www\n'
    assert.equal(sameRecordsBesidesSerial(zone, withSerial(zone, 2026120401)), true)
    assert.equal(sameRecordsBesidesSerial(zone, parse(zoneText(4_000_000_000, extra))), true)
    for (const other of [
      zoneText(1, extra).replace('3600 900 604800 300', '3600 900 604800 301'),
      zoneText(1, extra).replace('hostmaster', 'admin'),
      zoneText(1, extra).replace('$TTL 3600', '$TTL 3601'),
      zoneText(1, 'mail 301 IN MX 10 www\n'),
      zoneText(1, 'mail 300 IN MX 20 www\n'),
      zoneText(1),
      zoneText(1, `${extra}mail 300 IN MX 20 www\n`),
    ]) {
      assert.equal(sameRecordsBesidesSerial(zone, parse(other)), false, other)
    }
  })

  test('arbitrary batches: a valid zone or a clear 4xx error, never a crash', () => {
    const types = fc.constantFrom('A', 'AAAA', 'CNAME', 'MX', 'NS', 'SRV', 'TXT', 'CAA', 'SOA', 'PTR', 'a', 'x', '')
    const change = fc.record({
      action: fc.constantFrom('upsert', 'delete'),
      name: fc.oneof(
        fc.constantFrom('@', '', 'www', 'mail', 'ns1', 'x.example.org.', '*.w', 'a..b'),
        fc.string({ maxLength: 20 }),
      ),
      type: types,
      ttl: fc.option(fc.oneof(fc.integer({ min: -5, max: 2 ** 31 + 5 }), fc.constant(300)), { nil: undefined }),
      records: fc.option(
        fc.array(
          fc.oneof(
            fc.string({ maxLength: 30 }),
            fc.constantFrom('192.0.2.1', '::1', '10 @', '0 0 1 host', '"txt"', '0 issue "ca"', 'www', '( 192.0.2.9 )'),
          ),
          { maxLength: 4 },
        ),
        { nil: undefined },
      ),
    }) as fc.Arbitrary<RRsetChange>
    fc.assert(
      fc.property(fc.array(change, { minLength: 1, maxLength: 5 }), (changes) => {
        try {
          const next = applyChanges(zone, changes)
          validateZone(next)
          assert.deepEqual(parseZone(renderZone(next), { origin: 'example.test.' }), next)
          // A batch can never touch the SOA: "unchanged" is exactly "the same zone text".
          assert.equal(sameRecordsBesidesSerial(zone, next), renderZone(next) === renderZone(zone))
        } catch (err) {
          assert.ok(err instanceof AppError, String((err as Error).stack))
          assert.ok(err.statusCode >= 400 && err.statusCode < 500)
          assert.ok(err.message.length > 0)
        }
      }),
      { numRuns: 1500 },
    )
  })
})
