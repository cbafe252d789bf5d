/**
 * The bounds on undecided fingerprint aggregates (observations/bounds.ts), on both databases:
 * the per-node cap removes the least recently seen, the retention removes the unseen, and
 * neither touches an aggregate with a live decision. Then the running server: a node that
 * uploads past `--max-fingerprints` is brought back to it by the cleanup, with a metric.
 */
import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { metric } from '@gatehouse/testkit'
import { openEdgeDatabase } from '../src/db/open.ts'
import { changeDecision, removeDecision } from '../src/decisions/service.ts'
import { pruneAggregatesToCap, removeUnseenAggregates } from '../src/observations/bounds.ts'
import { mergeBatch } from '../src/observations/group-merge.ts'
import type { Aggregate } from '../src/observations/merge.ts'
import {
  call,
  DIALECTS,
  fileServices,
  type Json,
  newDatabase,
  observation,
  seed,
  startEdgegate,
  waitFor,
} from './helpers.ts'

const { pg, tls } = fileServices()
after(() => pg.stop())

const BASE = Date.UTC(2026, 10, 22)
const fp = (i: number) => `f${String(i).padStart(31, '0')}`

function aggregate(fingerprint: string, lastSeenMs: number): Aggregate {
  return {
    fingerprint,
    reported_status: 'unknown',
    first_seen_ms: lastSeenMs,
    last_seen_ms: lastSeenMs,
    count: 1,
    ips: ['192.0.2.1'],
    ports: [22],
    sightings: [],
    metadata: {},
  }
}

for (const dialect of DIALECTS) {
  describe(`fingerprint aggregate bounds (${dialect})`, () => {
    test('the cap and the retention remove undecided aggregates, oldest first, and never a decided one', async () => {
      const database = await newDatabase(dialect, pg.get)
      await seed(database, [
        { id: 'g1', kind: 'sshgate' },
        { id: 'g2', kind: 'sshgate' },
        { id: 'g3', kind: 'sshgate' },
        { id: 'g4', kind: 'sshgate' },
      ])
      const d = await openEdgeDatabase(database)
      try {
        // g1: 2,500 aggregates (more than a batch of the walk), fp(i) last seen at BASE + i,
        // stored in two groups out of time order; g2: 10, seen later than all of g1's.
        const g1 = Array.from({ length: 2500 }, (_, i) => aggregate(fp(i), BASE + i))
        await mergeBatch(d, 'g1', g1.slice(1200), 0, BASE + 9000)
        await mergeBatch(d, 'g1', g1.slice(0, 1200), 0, BASE + 9000)
        await mergeBatch(
          d,
          'g2',
          Array.from({ length: 10 }, (_, i) => aggregate(fp(i), BASE + 5000 + i)),
          0,
          BASE + 9000,
        )
        // g3: 5 seen at the same time (a batch from a node whose clock ran ahead is dated on arrival).
        await mergeBatch(
          d,
          'g3',
          Array.from({ length: 5 }, (_, i) => aggregate(fp(i), BASE + 7000)),
          0,
          BASE + 9000,
        )
        // g4: 1,200 seen at one time, more than one statement of the walk reads.
        await mergeBatch(
          d,
          'g4',
          Array.from({ length: 1200 }, (_, i) => aggregate(fp(i), BASE + 8000)),
          0,
          BASE + 9000,
        )
        // The two oldest of g1 are decided; the third's decision was deleted (a tombstone).
        await changeDecision(d.db, d.kind, { instanceId: 'g1', fingerprint: fp(0), status: 'approved', actor: 't' })
        await changeDecision(d.db, d.kind, { instanceId: 'g1', fingerprint: fp(1), status: 'blocked', actor: 't' })
        await changeDecision(d.db, d.kind, { instanceId: 'g1', fingerprint: fp(2), status: 'pending', actor: 't' })
        await removeDecision(d.db, d.kind, 'g1', fp(2), 't')
        const kept = async (node: string) =>
          (
            await d.db
              .selectFrom('fingerprints')
              .select('fingerprint')
              .where('instance_id', '=', node)
              .orderBy('fingerprint')
              .execute()
          ).map((r) => r.fingerprint)
        const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => fp(from + i))

        assert.equal(await pruneAggregatesToCap(d.db, -1), 0, '-1 is no cap')
        assert.equal(await pruneAggregatesToCap(d.db, 2500), 0, 'at the cap nothing goes')
        // 1,500 over: the 1,500 least recently seen undecided (fp 2 … 1501) go.
        assert.equal(await pruneAggregatesToCap(d.db, 1000), 1500 + 200)
        assert.deepEqual(await kept('g1'), [fp(0), fp(1), ...range(1502, 2500)])
        assert.deepEqual(await kept('g2'), range(0, 10), 'a node under the cap keeps everything')
        assert.deepEqual(await kept('g4'), range(200, 1200), 'ties go in fingerprint order')

        assert.equal(await removeUnseenAggregates(d.db, BASE + 2000), 498, 'unseen since BASE + 2000: fp 1502 … 1999')
        assert.deepEqual(await kept('g1'), [fp(0), fp(1), ...range(2000, 2500)])
        assert.equal(await removeUnseenAggregates(d.db, BASE + 2000), 0, 'a second sweep finds nothing')

        // Below the number of decided aggregates: every undecided one goes, the decided stay.
        assert.equal(await pruneAggregatesToCap(d.db, 1), 500 + 9 + 4 + 999)
        assert.deepEqual(await kept('g1'), [fp(0), fp(1)])
        assert.deepEqual(await kept('g2'), [fp(9)], 'the most recently seen stays')
        assert.equal((await kept('g3')).length, 1, 'of five seen at the same time, exactly one stays')
        assert.deepEqual(await kept('g4'), [fp(1199)])

        // A removed fingerprint seen again starts a new aggregate.
        await mergeBatch(d, 'g1', [aggregate(fp(1000), BASE + 10_000)], 0, BASE + 10_000)
        assert.deepEqual(await kept('g1'), [fp(0), fp(1), fp(1000)])
      } finally {
        await d.close()
      }
    })

    test('a running server brings a node over --max-fingerprints back to it', async () => {
      const database = await newDatabase(dialect, pg.get)
      const { tokens, admin } = await seed(database, [{ id: 'ssh1', kind: 'sshgate' }])
      const eg = await startEdgegate(database, tls, ['--max-fingerprints', '3', '--retention-interval', '1s'])
      try {
        const t0 = Date.now()
        const observations = Array.from({ length: 5 }, (_, i) => {
          const seen = new Date(t0 - (5 - i) * 1000).toISOString()
          return observation(fp(i), { first_seen: seen, last_seen: seen, sightings: [] })
        })
        const up = await call(tls, eg.base, '/v1/observations/batch?instance_id=ssh1', {
          method: 'POST',
          token: tokens.ssh1!,
          body: { instance_id: 'ssh1', observations },
        })
        assert.equal(up.status, 200, JSON.stringify(up.body))
        const listed = async () =>
          ((await call(tls, eg.base, '/api/fingerprints?instance_id=ssh1', { token: admin })).body as Json).fingerprints
            .map((f: Json) => f.fingerprint)
            .sort()
        await waitFor('the cleanup removed the two least recently seen', async () => (await listed()).length === 3)
        assert.deepEqual(await listed(), [fp(2), fp(3), fp(4)])
        const text = (await call(tls, eg.base, '/metrics')).body as string
        assert.equal(metric(text, 'edgegate_fingerprint_aggregates_removed_total', { reason: 'cap' }), 2)
        await waitFor('the warning', () =>
          /"instance_id":"ssh1","removed":2,"max_fingerprints":3,"msg":"node ssh1 had more fingerprint aggregates than --max-fingerprints/.test(
            eg.child.log(),
          ),
        )
      } finally {
        await eg.stop()
      }
    })
  })
}
