/**
 * Group commit of observation pages (both databases): pages merged concurrently through the
 * queue store exactly what one transaction per page stores, pages of several instances share a
 * group, and a page that fails in a group fails alone.
 */
import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import type { Observation } from '@gatehouse/kit'
import { type EdgeDatabase, openEdgeDatabase } from '../src/db/open.ts'
import { mergeBatch } from '../src/observations/group-merge.ts'
import { normalizeObservation } from '../src/observations/merge.ts'
import { MergeQueue } from '../src/observations/merge-queue.ts'
import { DIALECTS, lazyPostgres, newDatabase } from './helpers.ts'

const pg = lazyPostgres()
after(() => pg.stop())

const BASE = Date.UTC(2026, 10, 22)

/**
 * `d` with its transactions counted: those the merges start (SQLite: `transactionSync`,
 * PostgreSQL: `db.transaction()`), and the most running at once.
 */
function countTransactions(d: EdgeDatabase) {
  const counts = { started: 0, most: 0, inFlight: 0 }
  const running = async <T>(work: () => Promise<T>): Promise<T> => {
    counts.started++
    counts.most = Math.max(counts.most, ++counts.inFlight)
    try {
      return await work()
    } finally {
      counts.inFlight--
    }
  }
  const { transactionSync } = d
  if (transactionSync)
    return Object.assign(counts, {
      database: { ...d, transactionSync: <T>(fn: (tx: never) => T) => running(() => transactionSync(fn as never)) },
    }) as typeof counts & { database: EdgeDatabase }
  const db = new Proxy(d.db, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target)
      if (prop !== 'transaction') return typeof value === 'function' ? value.bind(target) : value
      return () => {
        const builder = target.transaction()
        return { execute: <T>(fn: (trx: never) => Promise<T>) => running(() => builder.execute(fn as never)) }
      }
    },
  })
  return Object.assign(counts, { database: { ...d, db } as EdgeDatabase })
}

/** Page p: 4 observations over 6 fingerprints, so pages overlap and repeat fingerprints. */
function page(p: number): Observation[] {
  return [0, 1, 2, 3].map((k) => {
    const at = new Date(BASE + ((p * 7 + k * 13) % 50) * 1000).toISOString()
    return {
      fingerprint: String((p + k) % 6).repeat(32),
      status: 'unknown',
      first_seen: at,
      last_seen: at,
      ips: [`192.0.2.${(p * 3 + k) % 200}`, `2001:db8::${p.toString(16)}`],
      ports: [22, 1000 + p],
      sightings: [{ ip: `192.0.2.${(p * 3 + k) % 200}`, port: 40000 + p, last_seen: at }],
      count: p + k,
    }
  })
}

for (const dialect of DIALECTS) {
  describe(`merge queue (${dialect})`, () => {
    test('concurrent pages through the queue store what one transaction per page stores', async () => {
      const d = await openEdgeDatabase(await newDatabase(dialect, pg.get))
      try {
        const pages = Array.from({ length: 60 }, (_, p) => page(p).map((o, i) => normalizeObservation(o, i, 0)))
        for (const agg of pages) await mergeBatch(d, 'seq', agg, 0, 1)
        const queue = new MergeQueue(d)
        await Promise.all(pages.map((agg) => queue.merge('grp', agg, 0, 1)))
        // Re-sent pages change nothing.
        await Promise.all(pages.slice(0, 20).map((agg) => queue.merge('grp', agg, 0, 1)))
        const rows = async (id: string) =>
          (
            await d.db
              .selectFrom('fingerprints')
              .selectAll()
              .where('instance_id', '=', id)
              .orderBy('fingerprint')
              .execute()
          ).map((r) => ({ ...r, instance_id: undefined, reported_status: undefined, metadata: undefined }))
        const grouped = await rows('grp')
        assert.equal(grouped.length, 6)
        assert.deepEqual(grouped, await rows('seq'))
      } finally {
        await d.close()
      }
    })

    test('groups formed in successive turns, in flight together, store what one transaction per page stores', async () => {
      const d = await openEdgeDatabase(await newDatabase(dialect, pg.get))
      try {
        const pages = Array.from({ length: 60 }, (_, p) => page(p).map((o, i) => normalizeObservation(o, i, 0)))
        for (const agg of pages) await mergeBatch(d, 'seq', agg, 0, 1)
        const counted = countTransactions(d)
        const queue = new MergeQueue(counted.database)
        // A few pages per turn of the event loop, every page repeating fingerprints of others.
        const done: Promise<void>[] = []
        for (let p = 0; p < pages.length; p++) {
          done.push(queue.merge('grp', pages[p]!, 0, 1))
          if (p % 3 === 2) await new Promise((r) => setImmediate(r))
        }
        await Promise.all(done)
        const rows = async (id: string) =>
          (
            await d.db
              .selectFrom('fingerprints')
              .selectAll()
              .where('instance_id', '=', id)
              .orderBy('fingerprint')
              .execute()
          ).map((r) => ({ ...r, instance_id: undefined, reported_status: undefined, metadata: undefined }))
        assert.deepEqual(await rows('grp'), await rows('seq'))
        // PostgreSQL runs two groups at once (SQLite one): the overlap was exercised.
        assert.equal(counted.most, d.kind === 'postgres' ? 2 : 1)
      } finally {
        await d.close()
      }
    })

    test('a page that fails in a group fails alone; the others are stored', async () => {
      const d = await openEdgeDatabase(await newDatabase(dialect, pg.get))
      try {
        const queue = new MergeQueue(d)
        const good = [0, 1, 2].map((p) => page(p).map((o, i) => normalizeObservation(o, i, 0)))
        // A NOT NULL violation the schema would never let through, to make the SQL fail.
        const bad = page(3).map((o, i) => ({
          ...normalizeObservation(o, i, 0),
          fingerprint: 'b'.repeat(32),
          reported_status: null as unknown as string,
        }))
        const results = await Promise.allSettled([
          queue.merge('g', good[0]!, 0, 1),
          queue.merge('g', good[1]!, 0, 1),
          queue.merge('g', bad, 0, 1),
          queue.merge('g', good[2]!, 0, 1),
        ])
        assert.deepEqual(
          results.map((r) => r.status),
          ['fulfilled', 'fulfilled', 'rejected', 'fulfilled'],
        )
        const fps = await d.db.selectFrom('fingerprints').select('fingerprint').where('instance_id', '=', 'g').execute()
        assert.equal(fps.length, 6)
        assert.ok(fps.every((r) => r.fingerprint !== 'b'.repeat(32)))
      } finally {
        await d.close()
      }
    })
  })
}

for (const dialect of DIALECTS)
  describe(`merge queue grouping (${dialect})`, () => {
    test('pages queued in one turn of the event loop share one transaction', async () => {
      const d = await openEdgeDatabase(await newDatabase(dialect, pg.get))
      try {
        const counted = countTransactions(d)
        const queue = new MergeQueue(counted.database)
        const pages = [0, 1, 2, 3].map((p) => page(p).map((o, i) => normalizeObservation(o, i, 0)))
        // As the requests read from several sockets in one I/O phase do: every page is queued
        // before any is written (a SQLite transaction never yields to I/O once started). Pages
        // of two instances, so one statement writes rows of both.
        await Promise.all(pages.map((agg, p) => queue.merge(p % 2 ? 'g' : 'h', agg, 0, 1)))
        assert.equal(counted.started, 1)
        await queue.merge('g', pages[0]!, 0, 1)
        assert.equal(counted.started, 2)
        for (const [p, agg] of pages.entries()) await mergeBatch(d, p % 2 ? 'seq-g' : 'seq-h', agg, 0, 1)
        await mergeBatch(d, 'seq-g', pages[0]!, 0, 1)
        const rows = async (id: string) =>
          (
            await d.db
              .selectFrom('fingerprints')
              .selectAll()
              .where('instance_id', '=', id)
              .orderBy('fingerprint')
              .execute()
          ).map((r) => ({ ...r, instance_id: undefined }))
        assert.deepEqual(await rows('g'), await rows('seq-g'))
        assert.deepEqual(await rows('h'), await rows('seq-h'))
        assert.ok((await rows('g')).length > 0 && (await rows('h')).length > 0)
      } finally {
        await d.close()
      }
    })
  })
