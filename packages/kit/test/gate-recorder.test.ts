/**
 * The kit's GateRecorder, which both gates use to gather connections between flushes: what one
 * flush carries per fingerprint (counts, first and last seen, the gate's own fields, sightings
 * bounded like the stored ones), early flushes, and a failed write that is logged, not thrown.
 */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { GateRecorder, type GateSeen } from '../src/gate-recorder.ts'
import type { GateObservation } from '../src/gate-store.ts'
import type { Logger } from '../src/logger.ts'

interface Seen extends GateSeen {
  sni: string
  refused: boolean
}
interface Obs extends GateObservation {
  refused: number
}

function recorder(options: { maxPending?: number; fail?: boolean } = {}) {
  const batches: Obs[][] = []
  const logged: string[] = []
  const logger = {
    info: (_: unknown, msg: string) => logged.push(`info ${msg}`),
    error: (_: unknown, msg: string) => logged.push(`error ${msg}`),
  } as unknown as Logger
  const r = new GateRecorder<Seen, Obs>({
    logger,
    intervalMs: 3_600_000,
    ...(options.maxPending === undefined ? {} : { maxPending: options.maxPending }),
    now: () => '2026-11-27T12:00:00.000Z',
    sighting: (s) => ({ ip: s.ip, port: s.port, last_seen: s.at }),
    start: (s) => ({ metadata: JSON.stringify({ sni: s.sni }), refused: s.refused ? 1 : 0 }),
    fold: (o, s, latest) => {
      if (s.refused) o.refused++
      if (latest) o.metadata = JSON.stringify({ sni: s.sni })
    },
    write: async (batch) => {
      if (options.fail) throw new Error('disk full')
      batches.push(batch)
      return { pruned: batch.length > 1 ? 1 : 0 }
    },
  })
  return { r, batches, logged }
}

const at = (s: number) => new Date(Date.UTC(2026, 10, 27, 10, 0, s)).toISOString()

describe('GateRecorder', () => {
  test('one observation per fingerprint and flush: counts, times, latest metadata, bounded sightings', async () => {
    const { r, batches, logged } = recorder()
    // Out of order in time: first and last seen are the earliest and the latest, not the first and last added.
    r.add({ fingerprint: 'a', ip: '192.0.2.1', port: 1000, at: at(5), sni: 'five', refused: false })
    r.add({ fingerprint: 'a', ip: '192.0.2.1', port: 1001, at: at(9), sni: 'nine', refused: true })
    r.add({ fingerprint: 'a', ip: '192.0.2.1', port: 1002, at: at(7), sni: 'seven', refused: true })
    for (let i = 0; i < 300; i++)
      r.add({
        fingerprint: 'b',
        ip: `10.0.${i >> 8}.${i & 255}`,
        port: 2000 + i,
        at: at(i % 60),
        sni: 'b',
        refused: false,
      })
    await r.flush()
    assert.equal(batches.length, 1)
    const a = batches[0]!.find((o) => o.fingerprint === 'a')!
    assert.deepEqual(
      [a.count, a.refused, a.firstSeen, a.lastSeen, a.metadata, a.sightings.length],
      [3, 2, at(5), at(9), '{"sni":"nine"}', 3],
    )
    const b = batches[0]!.find((o) => o.fingerprint === 'b')!
    assert.equal(b.count, 300)
    assert.ok(b.sightings.length <= 256, `${b.sightings.length} pending sightings`)
    assert.deepEqual(logged, ['info pruned fingerprint entries over max_fingerprints'])
    // Nothing pending: a flush writes nothing.
    await r.flush()
    assert.equal(batches.length, 1)
    await r.close()
  })

  test('flushes early at maxPending fingerprints, and close writes the rest', async () => {
    const { r, batches } = recorder({ maxPending: 2 })
    r.add({ fingerprint: 'a', ip: '192.0.2.1', port: 1, at: at(1), sni: 'x', refused: false })
    r.add({ fingerprint: 'b', ip: '192.0.2.1', port: 2, at: at(2), sni: 'x', refused: false })
    // The early flush starts after the current turn: what arrived in it goes along.
    await new Promise(setImmediate)
    assert.equal(batches.length, 1)
    r.add({ fingerprint: 'c', ip: '192.0.2.1', port: 3, at: at(3), sni: 'x', refused: false })
    await r.close()
    assert.deepEqual(
      batches.map((b) => b.map((o) => o.fingerprint)),
      [['a', 'b'], ['c']],
    )
  })

  test('a failed write is logged and the recorder goes on', async () => {
    const { r, logged } = recorder({ fail: true })
    r.add({ fingerprint: 'a', ip: '192.0.2.1', port: 1, at: at(1), sni: 'x', refused: false })
    await r.flush()
    assert.deepEqual(logged, ['error storing observations failed'])
    r.add({ fingerprint: 'a', ip: '192.0.2.1', port: 1, at: at(2), sni: 'x', refused: false })
    await r.close()
    assert.equal(logged.length, 2)
  })
})
