/**
 * How both gates decode and merge an entry's stored sets (kit gate-store.ts): damaged or
 * foreign JSON reads as empty instead of failing, merges keep the kit's bounds and rules, and
 * fields a gate adds to its sightings survive.
 */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { EDGE_LIMITS } from '../src/edge-limits.ts'
import { boundMetadata, decodeStoredSets, mergeStoredSets, type StoredSighting } from '../src/gate-store.ts'

const empty = { ips: '[]', ports: '[]', sightings: '[]', metadata: '{}' }

describe('gate store sets', () => {
  test('damaged, foreign or wrongly typed JSON decodes as empty, and keeps the valid elements', () => {
    assert.deepEqual(decodeStoredSets({ ips: 'not json', ports: '{"a":1}', sightings: 'null', metadata: '[1,2]' }), {
      ips: [],
      ports: [],
      sightings: [],
      metadata: {},
    })
    const mixed = decodeStoredSets({
      ips: '["192.0.2.1", 7, null]',
      ports: '[22, -1, 65536, 1.5, "22", 65535]',
      sightings: JSON.stringify([
        { ip: '192.0.2.1', port: 22, last_seen: '2026-11-27T10:00:00Z' },
        { ip: '192.0.2.1', port: 'x', last_seen: '2026-11-27T10:00:00Z' },
        null,
      ]),
      metadata: '{"sni":"example.test"}',
    })
    assert.deepEqual(mixed.ips, ['192.0.2.1'])
    assert.deepEqual(mixed.ports, [22, 65535])
    assert.equal(mixed.sightings.length, 1)
    assert.deepEqual(mixed.metadata, { sni: 'example.test' })
  })

  test('merging keeps 128 of each, the newest sighting per pair first, and a gate’s own fields', () => {
    interface Relayed extends StoredSighting {
      relay_port?: number
    }
    const added: Relayed[] = []
    for (let i = 0; i < 140; i++)
      added.push({
        ip: `192.0.2.${i}`,
        port: 1000 + i,
        last_seen: `2026-11-27T10:00:${String(i % 60).padStart(2, '0')}Z`,
      })
    const first = mergeStoredSets(undefined, added)
    const decoded = decodeStoredSets<Relayed>({ ...first, metadata: '{}' })
    assert.equal(decoded.ips.length, EDGE_LIMITS.perFingerprint)
    assert.equal(decoded.ports.length, EDGE_LIMITS.perFingerprint)
    assert.equal(decoded.sightings.length, EDGE_LIMITS.perFingerprint)
    // A later sighting of a known pair replaces it (times compared as instants) and carries its fields.
    const again: Relayed = { ip: '192.0.2.5', port: 1005, last_seen: '2026-11-27T11:00:00.5+01:00', relay_port: 40000 }
    const later: Relayed = { ip: '192.0.2.5', port: 1005, last_seen: '2026-11-27T10:30:00.000Z', relay_port: 40001 }
    const merged = decodeStoredSets<Relayed>({ ...mergeStoredSets(first, [again, later]), metadata: '{}' })
    assert.deepEqual(merged.sightings[0], later)
    assert.equal(merged.sightings.filter((s) => s.ip === '192.0.2.5' && s.port === 1005).length, 1)
    // Sets written by another version beyond the bounds come back within them.
    const oversized = { ips: JSON.stringify(added.map((s) => s.ip)), ports: '[]', sightings: '[]' }
    assert.equal(JSON.parse(mergeStoredSets(oversized, []).ips).length, EDGE_LIMITS.perFingerprint)
    assert.deepEqual(mergeStoredSets({ ...empty }, []), { ips: '[]', ports: '[]', sightings: '[]' })
  })

  test('metadata over the limit is dropped, at the byte count, not the character count', () => {
    const under = JSON.stringify({ x: 'a'.repeat(EDGE_LIMITS.metadataBytes - 10) })
    assert.equal(boundMetadata(under), under)
    const multibyte = JSON.stringify({ x: 'é'.repeat(EDGE_LIMITS.metadataBytes / 2) })
    assert.equal(boundMetadata(multibyte), '{}')
  })
})
