/** The record-level zone diff (dry runs): what it lists turns the old zone into the new one. */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { parseZone, renderZone } from '../src/zonefile/index.ts'
import { diffZones } from '../src/zones/diff.ts'

const head =
  '$ORIGIN d.test.\n@ 3600 IN SOA ns1 hostmaster 1 3600 900 604800 300\n@ 3600 IN NS ns1\nns1 3600 IN A 192.0.2.1\n'
const zoneOf = (lines: string[]) => parseZone(`${head}${lines.join('\n')}\n`, { origin: 'd.test.' })
const recordLines = (text: string) => text.split('\n').slice(1).filter(Boolean)

describe('diffZones', () => {
  test('a new zone is all additions; equal zones have no difference', () => {
    const z = zoneOf(['www 300 IN A 192.0.2.10'])
    const created = diffZones(undefined, z)
    assert.deepEqual([created.added, created.removed, created.unchanged], [4, 0, 0])
    assert.deepEqual(diffZones(z, z), { added: 0, removed: 0, unchanged: 4, records: [] })
  })

  test('property: removing the removed lines and adding the added ones gives the new zone', () => {
    const host = fc.constantFrom('www', 'api', 'mail', 'x')
    const record = fc
      .tuple(host, fc.integer({ min: 1, max: 4 }), fc.constantFrom(60, 300))
      .map(([h, n, ttl]) => `${h} ${ttl} IN A 192.0.2.${n}`)
    // One TTL per RRset: keep the first TTL seen for each owner.
    const zoneLines = fc.uniqueArray(record, { maxLength: 8 }).map((lines) => {
      const ttlOf = new Map<string, string>()
      return [
        ...new Set(
          lines.map((l) => {
            const [h, ttl, ...rest] = l.split(' ')
            if (!ttlOf.has(h!)) ttlOf.set(h!, ttl!)
            return [h, ttlOf.get(h!), ...rest].join(' ')
          }),
        ),
      ]
    })
    fc.assert(
      fc.property(zoneLines, zoneLines, (a, b) => {
        const before = zoneOf(a)
        const after = zoneOf(b)
        const d = diffZones(before, after)
        const result = new Set(recordLines(renderZone(before)))
        for (const r of d.records) {
          if (r.op === 'remove') assert.ok(result.delete(r.record), r.record)
          else result.add(r.record)
        }
        assert.deepEqual([...result].sort(), recordLines(renderZone(after)).sort())
        assert.equal(d.unchanged + d.added, after.records.length)
        assert.equal(d.unchanged + d.removed, before.records.length)
      }),
    )
  })
})
