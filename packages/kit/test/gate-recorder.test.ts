/**
 * The kit's GateRecorder, which both gates use to gather connections between flushes: what one
 * flush carries per fingerprint (counts, first and last seen, the gate's own fields, sightings
 * bounded like the stored ones), early flushes, and failed writes: given back while the database
 * is unavailable, dropped otherwise, and never thrown.
 */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { GateRecorder, type GateSeen } from '../src/gate-recorder.ts'
import type { GateObservation } from '../src/gate-store.ts'
import type { Logger } from '../src/logger.ts'
import { type AppMetrics, createMetrics } from '../src/metrics.ts'

interface Seen extends GateSeen {
  sni: string
  refused: boolean
}
interface Obs extends GateObservation {
  refused: number
}

/** What node:sqlite throws when the disk is full: the database is unavailable, not the batch wrong. */
function diskFull(): Error {
  return Object.assign(new Error('database or disk is full'), { code: 'ERR_SQLITE_ERROR', errcode: 13 })
}

function recorder(options: { maxPending?: number; maxHeld?: number; metrics?: AppMetrics } = {}) {
  const batches: Obs[][] = []
  const logged: string[] = []
  const fields: Record<string, unknown>[] = []
  /** Set to make the next writes fail with this error. */
  const state: { failWith?: () => Error; hold?: Promise<void>; attempts: number } = { attempts: 0 }
  const log = (level: string) => (f: Record<string, unknown>, msg: string) => {
    logged.push(`${level} ${msg}`)
    fields.push(f)
  }
  const logger = { info: log('info'), warn: log('warn'), error: log('error') } as unknown as Logger
  const r = new GateRecorder<Seen, Obs>({
    logger,
    intervalMs: 3_600_000,
    ...(options.maxPending === undefined ? {} : { maxPending: options.maxPending }),
    ...(options.maxHeld === undefined ? {} : { maxHeld: options.maxHeld }),
    ...(options.metrics === undefined ? {} : { metrics: options.metrics }),
    now: () => '2026-11-27T12:00:00.000Z',
    sighting: (s) => ({ ip: s.ip, port: s.port, last_seen: s.at }),
    start: (s) => ({ metadata: JSON.stringify({ sni: s.sni }), refused: s.refused ? 1 : 0 }),
    fold: (o, s, latest) => {
      if (s.refused) o.refused++
      if (latest) o.metadata = JSON.stringify({ sni: s.sni })
    },
    merge: (o, kept) => {
      o.refused += kept.refused
    },
    write: async (batch) => {
      state.attempts++
      await state.hold
      if (state.failWith) throw state.failWith()
      batches.push(batch)
      return { pruned: batch.length > 1 ? 1 : 0 }
    },
  })
  return { r, batches, logged, fields, state }
}

const at = (s: number) => new Date(Date.UTC(2026, 10, 27, 10, 0, s)).toISOString()
const conn = (fingerprint: string, second: number, o: { sni?: string; refused?: boolean; ip?: string } = {}): Seen => ({
  fingerprint,
  ip: o.ip ?? '192.0.2.1',
  port: 1000 + second,
  at: at(second),
  sni: o.sni ?? 'x',
  refused: o.refused ?? false,
})

describe('GateRecorder', () => {
  test('one observation per fingerprint and flush: counts, times, latest metadata, bounded sightings', async () => {
    const { r, batches, logged } = recorder()
    // Out of order in time: first and last seen are the earliest and the latest, not the first and last added.
    r.add({ fingerprint: 'a', ip: '192.0.2.1', port: 1000, at: at(5), sni: 'five', refused: false })
    r.add({ fingerprint: 'a', ip: '192.0.2.1', port: 1001, at: at(9), sni: 'nine', refused: true })
    r.add({ fingerprint: 'a', ip: '192.0.2.1', port: 1002, at: at(7), sni: 'seven', refused: true })
    r.add({ fingerprint: 'a', ip: '192.0.2.1', port: 1003, at: at(3), sni: 'three', refused: false })
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
      [4, 2, at(3), at(9), '{"sni":"nine"}', 4],
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

  test('a write that fails for another reason is logged and dropped: writing it again would fail again', async () => {
    const { r, batches, logged, state } = recorder()
    state.failWith = () => new TypeError('bad batch')
    r.add(conn('a', 1))
    await r.flush()
    assert.deepEqual(logged, ['error storing observations failed'])
    state.failWith = undefined
    r.add(conn('b', 2))
    await r.close()
    assert.deepEqual(
      batches.map((b) => b.map((o) => [o.fingerprint, o.count])),
      [[['b', 1]]],
    )
  })

  test('a database that is unavailable loses nothing: the batch is merged into what came after and written later', async () => {
    const { r, batches, logged, fields, state } = recorder()
    r.add(conn('a', 5, { sni: 'five', ip: '192.0.2.5' }))
    r.add(conn('a', 9, { sni: 'nine', refused: true, ip: '192.0.2.9' }))
    r.add(conn('b', 1))
    r.add(conn('d', 20, { sni: 'twenty' }))
    state.failWith = diskFull
    const { promise, resolve } = Promise.withResolvers<void>()
    state.hold = promise
    const failing = r.flush()
    await new Promise(setImmediate)
    assert.equal(state.attempts, 1)
    // While that write runs: a later connection of a; one of d older than the batch's (out of order).
    r.add(conn('a', 12, { sni: 'twelve', refused: true, ip: '192.0.2.12' }))
    r.add(conn('d', 15, { sni: 'fifteen' }))
    resolve()
    await failing
    // The next write fails too: the batch holds what was given back.
    r.add(conn('c', 30))
    await r.flush()
    assert.equal(state.attempts, 2)
    // Logged once per outage, not once per failed flush.
    assert.deepEqual(logged, [
      'error storing observations failed; they are kept and written once the database is available',
    ])
    assert.equal(fields[0]!.reason, 'database or disk is full')

    state.failWith = undefined
    await r.flush()
    assert.equal(batches.length, 1)
    const byFp = new Map(batches[0]!.map((o) => [o.fingerprint, o]))
    const a = byFp.get('a')!
    assert.deepEqual(
      [a.count, a.refused, a.firstSeen, a.lastSeen, a.metadata],
      [3, 2, at(5), at(12), '{"sni":"twelve"}'],
    )
    assert.deepEqual(a.sightings.map((s) => s.ip).sort(), ['192.0.2.12', '192.0.2.5', '192.0.2.9'])
    const d = byFp.get('d')!
    assert.deepEqual([d.count, d.firstSeen, d.lastSeen, d.metadata], [2, at(15), at(20), '{"sni":"twenty"}'])
    assert.deepEqual([byFp.get('b')!.count, byFp.get('c')!.count, byFp.size], [1, 1, 4])
    assert.equal(logged[1], 'info storing observations again')
    assert.equal(fields[1]!.notRecorded, 0)
    await r.close()
  })

  test('while writes fail, at most maxHeld fingerprints are held; the rest are counted, and early flushes wait for the interval', async () => {
    const metrics = createMetrics('gate')
    const { r, batches, logged, fields, state } = recorder({ maxPending: 2, maxHeld: 3, metrics })
    const scrape = async () => {
      const text = await metrics.registry.metrics()
      const value = (series: string) => Number(text.match(new RegExp(`^gate_${series} (\\S+)$`, 'm'))?.[1])
      return [
        value('observation_writes_total{result="ok"}'),
        value('observation_writes_total{result="failed"}'),
        value('observations_unwritten'),
        value('connections_not_recorded_total'),
      ]
    }
    assert.deepEqual(await scrape(), [0, 0, 0, 0])
    state.failWith = diskFull
    r.add(conn('a', 1))
    r.add(conn('b', 1))
    await new Promise(setImmediate)
    assert.equal(state.attempts, 1, 'the early flush ran')
    for (const fp of ['c', 'd', 'e']) r.add(conn(fp, 2))
    r.add(conn('a', 3))
    await new Promise(setImmediate)
    assert.equal(state.attempts, 1, 'no early flush while writes fail')
    assert.deepEqual(logged, [
      'error storing observations failed; they are kept and written once the database is available',
      'warn fingerprints over the held limit are not recorded until a write succeeds',
    ])
    // The outage on a dashboard: writes failing, fingerprints held, connections not recorded.
    assert.deepEqual(await scrape(), [0, 1, 3, 2])
    state.failWith = undefined
    await r.flush()
    assert.deepEqual(await scrape(), [1, 1, 0, 2])
    assert.deepEqual(batches[0]!.map((o) => [o.fingerprint, o.count]).sort(), [
      ['a', 2],
      ['b', 1],
      ['c', 1],
    ])
    assert.equal(logged[2], 'info storing observations again')
    assert.equal(fields[2]!.notRecorded, 2)
    await r.close()
  })

  test('flushes called while a write waits join one queued flush instead of piling up', async () => {
    // A write waiting out another process's lock while the interval keeps ticking: each queued
    // flush would find the given-back batch and wait out the lock once more.
    const { r, batches, state } = recorder()
    state.failWith = diskFull
    const { promise, resolve } = Promise.withResolvers<void>()
    state.hold = promise
    r.add(conn('a', 1))
    const running = r.flush()
    await new Promise(setImmediate)
    r.add(conn('b', 2))
    const queued = [r.flush(), r.flush(), r.flush()]
    assert.equal(new Set(queued).size, 1, 'one queued flush')
    resolve()
    await Promise.all([running, ...queued])
    assert.equal(state.attempts, 2)
    state.failWith = undefined
    await r.flush()
    assert.deepEqual(
      batches.map((b) => b.map((o) => o.fingerprint).sort()),
      [['a', 'b']],
    )
    await r.close()
  })

  test('close with the database still unavailable says how much was not stored', async () => {
    const { r, logged, fields, state } = recorder()
    state.failWith = () => Object.assign(new Error('database is locked'), { code: 'ERR_SQLITE_ERROR', errcode: 5 })
    r.add(conn('a', 1))
    r.add(conn('a', 2))
    r.add(conn('b', 3))
    await r.close()
    assert.equal(logged.at(-1), 'error observations not stored at shutdown: the database is unavailable')
    assert.deepEqual(fields.at(-1), { fingerprints: 2, connections: 3 })
  })
})
