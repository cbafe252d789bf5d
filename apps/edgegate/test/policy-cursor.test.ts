/**
 * The policy cursor never misses a decision: two edgegate processes share one database
 * (SQLite file or PostgreSQL) and take concurrent decision writes and deletes while a
 * follower pulls the policy with the cursor from either process and applies what it gets
 * idempotently. After the writers stop and one last pull, the follower holds exactly the
 * stored state: the live decisions, and `pending` for each deleted one.
 */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { sql } from 'kysely'
import { openEdgeDatabase } from '../src/db/open.ts'
import type { NewDecision } from '../src/db/schema.ts'
import { decisionsSince, tickClock, upsertDecision } from '../src/decisions/store.ts'
import { formatMicros, parseMicros } from '../src/timestamps.ts'
import {
  alertCatcher,
  call,
  DIALECTS,
  type Edgegate,
  fileServices,
  newDatabase,
  seed,
  startEdgegate,
  waitFor,
} from './helpers.ts'

const { pg, tls } = fileServices()

const VERDICTS = ['approved', 'blocked', 'pending'] as const
/** Writes the property test makes: a verdict, or a delete. */
const WRITES = [...VERDICTS, 'delete'] as const
const fpOf = (i: number) => i.toString(16).padStart(32, '0')

interface Pulled {
  status: string
  label: string
  updated_at: string
}

for (const dialect of DIALECTS) {
  describe(`policy cursor on ${dialect}, two processes`, () => {
    test('a follower of the cursor converges to the stored decisions under concurrent writes', async () => {
      const database = await newDatabase(dialect, pg.get)
      const nodes = Array.from({ length: 8 }, (_, i) => ({ id: `g${i}`, kind: 'sshgate' }))
      const { tokens, admin } = await seed(database, nodes)
      const servers: Edgegate[] = []
      try {
        servers.push(await startEdgegate(database, tls), await startEdgegate(database, tls))
        let run = 0
        await fc.assert(
          fc.asyncProperty(
            fc.array(
              fc.record({
                fp: fc.integer({ min: 0, max: 5 }),
                status: fc.constantFrom(...WRITES),
                label: fc.option(fc.string({ maxLength: 8 }), { nil: undefined }),
                server: fc.integer({ min: 0, max: 1 }),
              }),
              { minLength: 1, maxLength: 40 },
            ),
            async (ops) => {
              const instance = `g${run++ % nodes.length}`
              const token = tokens[instance]!
              // Start from this instance's current state.
              const state = new Map<string, Pulled>()
              let cursor: string | undefined
              const pull = async (server: Edgegate) => {
                for (;;) {
                  const q = cursor ? `&since=${encodeURIComponent(cursor)}` : ''
                  const res = await call(tls, server.base, `/v1/policy?instance_id=${instance}${q}`, { token })
                  assert.equal(res.status, 200)
                  if (cursor) assert.ok(res.body.cursor >= cursor, 'the cursor never moves back')
                  for (const d of res.body.decisions) {
                    if (cursor) assert.ok(d.updated_at > cursor, 'only decisions after since')
                    const prev = state.get(d.fingerprint)
                    if (!prev || prev.updated_at < d.updated_at) state.set(d.fingerprint, d)
                  }
                  cursor = res.body.cursor
                  if (!res.body.more) return
                }
              }
              await pull(servers[0]!)
              let writing = true
              const written: string[] = []
              const touched = new Set<string>()
              const lanes = [0, 1].map(async (lane) => {
                for (const op of ops.filter((o) => o.server === lane)) {
                  const path = `/api/decisions/${instance}/${fpOf(op.fp)}`
                  touched.add(fpOf(op.fp))
                  if (op.status === 'delete') {
                    // 404 when the other lane (or nothing) left no live decision to delete.
                    const res = await call(tls, servers[lane]!.base, path, { method: 'DELETE', token: admin })
                    assert.ok(res.status === 204 || res.status === 404, JSON.stringify(res.body))
                    continue
                  }
                  const res = await call(tls, servers[lane]!.base, path, {
                    method: 'PUT',
                    token: admin,
                    body: { status: op.status, ...(op.label !== undefined ? { label: op.label } : {}) },
                  })
                  assert.equal(res.status, 200, JSON.stringify(res.body))
                  written.push(res.body.updated_at)
                }
              })
              const follower = (async () => {
                let i = 0
                while (writing) await pull(servers[i++ % 2]!)
              })()
              await Promise.all(lanes)
              writing = false
              await follower
              await pull(servers[1]!)
              assert.equal(new Set(written).size, written.length, 'decision times are unique across processes')
              const stored = await call(tls, servers[0]!.base, `/api/decisions?instance_id=${instance}&limit=1000`, {
                token: admin,
              })
              const expected = new Map<string, Pulled>(
                stored.body.decisions.map((d: Pulled & { fingerprint: string }) => [d.fingerprint, d]),
              )
              // What the follower holds beyond the live decisions must be deletions: pending,
              // no label, of a fingerprint this run wrote.
              for (const [fp, d] of state) {
                if (expected.has(fp)) continue
                assert.ok(touched.has(fp), `${fp} was written in this run`)
                assert.deepEqual([d.status, d.label], ['pending', ''], `${fp} deleted`)
                expected.set(fp, d)
              }
              assert.deepEqual(
                [...state.entries()].sort().map(([fp, d]) => [fp, d.status, d.label, d.updated_at]),
                [...expected.entries()].sort().map(([fp, d]) => [fp, d.status, d.label, d.updated_at]),
              )
              // And a fresh full pull (no cursor) holds the same state as the follower.
              const full = new Map<string, Pulled>()
              for (let since = ''; ; ) {
                const q = since ? `&since=${encodeURIComponent(since)}` : ''
                const res = await call(tls, servers[0]!.base, `/v1/policy?instance_id=${instance}${q}`, { token })
                for (const d of res.body.decisions) full.set(d.fingerprint, d)
                since = res.body.cursor
                if (!res.body.more) break
              }
              assert.deepEqual(
                [...state.entries()].sort().map(([fp, d]) => [fp, d.status, d.label, d.updated_at]),
                [...full.entries()].sort().map(([fp, d]) => [fp, d.status, d.label, d.updated_at]),
              )
            },
          ),
          { numRuns: 8 },
        )
      } finally {
        for (const s of servers) await s.stop()
      }
    })

    test('paging: more: true until the page limit no longer cuts the answer', async () => {
      const database = await newDatabase(dialect, pg.get)
      const { tokens, admin } = await seed(database, [{ id: 'p1', kind: 'sshgate' }])
      const server = await startEdgegate(database, tls, ['--policy-page-size', '3'])
      try {
        await Promise.all(
          Array.from({ length: 8 }, (_, i) =>
            call(tls, server.base, `/api/decisions/p1/${fpOf(i)}`, {
              method: 'PUT',
              token: admin,
              body: { status: 'approved' },
            }),
          ),
        )
        const seen: string[] = []
        const pages: boolean[] = []
        let cursor = ''
        for (;;) {
          const res = await call(
            tls,
            server.base,
            `/v1/policy?instance_id=p1${cursor ? `&since=${encodeURIComponent(cursor)}` : ''}`,
            {
              token: tokens.p1,
            },
          )
          seen.push(...res.body.decisions.map((d: { fingerprint: string }) => d.fingerprint))
          pages.push(res.body.more)
          cursor = res.body.cursor
          if (!res.body.more) break
        }
        assert.deepEqual(pages, [true, true, false])
        assert.deepEqual(
          [...seen].sort(),
          Array.from({ length: 8 }, (_, i) => fpOf(i)),
        )
      } finally {
        await server.stop()
      }
    })

    test('deleted decisions past retention are removed; a gate that last pulled before one resyncs, a current gate does not', async () => {
      const database = await newDatabase(dialect, pg.get)
      const { tokens, admin } = await seed(database, [
        { id: 't1', kind: 'sshgate' },
        { id: 't2', kind: 'sshgate' },
      ])
      const put = (server: Edgegate, instance: string, i: number, status: string) =>
        call(tls, server.base, `/api/decisions/${instance}/${fpOf(i)}`, {
          method: 'PUT',
          token: admin,
          body: { status },
        })
      const del = (server: Edgegate, instance: string, i: number) =>
        call(tls, server.base, `/api/decisions/${instance}/${fpOf(i)}`, { method: 'DELETE', token: admin })
      const pull = (server: Edgegate, since?: string) =>
        call(tls, server.base, `/v1/policy?instance_id=t1${since ? `&since=${encodeURIComponent(since)}` : ''}`, {
          token: tokens.t1,
        })
      const first = await startEdgegate(database, tls)
      let oldCursor: string
      let currentCursor: string
      try {
        assert.equal((await put(first, 't1', 0, 'blocked')).status, 200)
        assert.equal((await put(first, 't1', 1, 'blocked')).status, 200)
        // The old gate pulls now, while fp1 is still blocked, and not again for 40 days.
        oldCursor = (await pull(first)).body.cursor
        assert.equal((await del(first, 't1', 1)).status, 204)
        assert.equal((await put(first, 't2', 0, 'approved')).status, 200)
        assert.equal((await del(first, 't2', 0)).status, 204)
        assert.equal((await put(first, 't1', 2, 'approved')).status, 200)
        // The current gate has everything, fp1's deletion included.
        const current = await pull(first, oldCursor)
        assert.deepEqual(
          current.body.decisions.map((d: Pulled & { fingerprint: string }) => [d.fingerprint, d.status]),
          [
            [fpOf(1), 'pending'],
            [fpOf(2), 'approved'],
          ],
        )
        currentCursor = current.body.cursor
        // A decision after it, so the clock is past the current gate's cursor.
        assert.equal((await put(first, 't2', 1, 'approved')).status, 200)
      } finally {
        await first.stop()
      }
      // Forty days pass: every time in the database, and both gates' cursors, move back.
      const DAYS_40_US = 40 * 86_400_000_000
      const back = (cursor: string) => formatMicros(parseMicros(cursor)! - DAYS_40_US)
      const d = await openEdgeDatabase(database, 2)
      try {
        await sql`update decisions set updated_us = updated_us - ${DAYS_40_US}`.execute(d.db)
        await sql`update decision_clock set last_us = last_us - ${DAYS_40_US}`.execute(d.db)
      } finally {
        await d.close()
      }
      const tombstones = async () => {
        const db = await openEdgeDatabase(database, 1)
        try {
          return (await db.db.selectFrom('decisions').select('fingerprint').where('deleted', '=', 1).execute()).length
        } finally {
          await db.close()
        }
      }
      assert.equal(await tombstones(), 2)
      const server = await startEdgegate(database, tls, ['--retention-interval', '1s', '--log-level', 'info'])
      try {
        // A deletion made now is far too recent to go.
        assert.equal((await del(server, 't1', 2)).status, 204)
        await waitFor('the old deletions removed', async () => (await tombstones()) === 1)
        await waitFor('the log line', () =>
          /deleted decisions older than --deleted-decision-retention/.test(server.child.log()),
        )
        const resync = await pull(server, back(oldCursor))
        assert.deepEqual([resync.body.resync, resync.body.resync_reason], [true, 'purged'])
        const text = (await call(tls, server.base, '/metrics')).body as string
        assert.match(text, /^edgegate_policy_cursor_purged_total 1$/m)
        await waitFor('the removal counted', async () =>
          /^edgegate_deleted_decisions_removed_total 2$/m.test(
            (await call(tls, server.base, '/metrics')).body as string,
          ),
        )
        // Its full pull holds what is left: fp0 blocked, fp2 deleted now; fp1 is gone, so the
        // gate drops the block it holds (kit gate-sync). Then incremental pulls are plain again.
        const full = await pull(server)
        assert.deepEqual(
          full.body.decisions.map((x: Pulled & { fingerprint: string }) => [x.fingerprint, x.status]),
          [
            [fpOf(0), 'blocked'],
            [fpOf(2), 'pending'],
          ],
        )
        assert.equal(full.body.resync, undefined)
        const after = await pull(server, full.body.cursor)
        assert.deepEqual([after.body.decisions, after.body.resync], [[], undefined])
        // The current gate saw fp1's deletion: its cursor is past every removed one.
        const current = await pull(server, back(currentCursor))
        assert.equal(current.body.resync, undefined)
        assert.deepEqual(
          current.body.decisions.map((x: Pulled & { fingerprint: string }) => [x.fingerprint, x.status]),
          [[fpOf(2), 'pending']],
        )
      } finally {
        await server.stop()
      }
    })

    test('a database restored to an older copy: a cursor past every decision is named and counted; new decisions still arrive', async () => {
      const database = await newDatabase(dialect, pg.get)
      const { tokens, admin } = await seed(database, [
        { id: 'r1', kind: 'sshgate' },
        { id: 'r2', kind: 'sshgate' },
      ])
      const decide = (server: Edgegate, i: number) =>
        call(tls, server.base, `/api/decisions/r1/${fpOf(i)}`, {
          method: 'PUT',
          token: admin,
          body: { status: 'blocked' },
        })
      const pull = (server: Edgegate, since?: string) =>
        call(tls, server.base, `/v1/policy?instance_id=r1${since ? `&since=${encodeURIComponent(since)}` : ''}`, {
          token: tokens.r1,
        })
      const first = await startEdgegate(database, tls)
      let cursor: string
      try {
        assert.equal((await decide(first, 0)).status, 200)
        const pulled = await pull(first)
        assert.deepEqual(
          pulled.body.decisions.map((d: { fingerprint: string }) => d.fingerprint),
          [fpOf(0)],
        )
        cursor = pulled.body.cursor
      } finally {
        await first.stop()
      }
      // The restore: the database as it was before the block, the gate still holding it.
      const d = await openEdgeDatabase(database, 2)
      try {
        await d.db.deleteFrom('decisions').execute()
        await d.db.updateTable('decision_clock').set({ last_us: 0 }).execute()
      } finally {
        await d.close()
      }
      // Two processes on the restored database, alerting to one channel.
      const alerts = await alertCatcher()
      // The group wait spans the two gates' pulls; under a loaded CI host 300 ms did not always (r1 and r2 then alert apart).
      const alerting = ['--alert-url', alerts.url, '--alert-group-wait', '3s']
      const restored = await startEdgegate(database, tls, ['--log-level', 'info', ...alerting])
      const other = await startEdgegate(database, tls, alerting)
      try {
        const behind = await pull(restored, cursor)
        assert.equal(behind.status, 200)
        assert.deepEqual([behind.body.decisions, behind.body.cursor, behind.body.resync], [[], cursor, true])
        // Gate r2 behind too, and both gates asking the other process: one alert names both.
        const r2 = await call(tls, restored.base, `/v1/policy?instance_id=r2&since=${encodeURIComponent(cursor)}`, {
          token: tokens.r2,
        })
        assert.equal(r2.body.resync, true)
        // The claims are written after the answers; the other process must find them, not race them.
        const claims = await openEdgeDatabase(database, 1)
        try {
          await waitFor('both claims written', async () => {
            const rows = await claims.db
              .selectFrom('node_alerts')
              .select('instance_id')
              .where('what', '=', 'database-behind')
              .execute()
            return rows.length === 2
          })
        } finally {
          await claims.close()
        }
        await waitFor('the warning naming the gate', () =>
          /"msg":"node r1 has decisions up to \S+Z, later than any in this database \(1970-01-01T00:00:00\.000000Z\): the database was restored/.test(
            restored.child.log(),
          ),
        )
        for (const [id, token] of Object.entries(tokens)) {
          const res = await call(tls, other.base, `/v1/policy?instance_id=${id}&since=${encodeURIComponent(cursor)}`, {
            token,
          })
          assert.equal(res.body.resync, true)
        }
        await waitFor('the alert', () => alerts.received.length > 0)
        await new Promise((resolve) => setTimeout(resolve, 1000))
        assert.deepEqual(
          alerts.received.map((a) => a.title),
          ['edgegate: 2 nodes are ahead of this database: r1, r2'],
          'once, from the process that claimed both',
        )
        assert.equal((await decide(restored, 1)).status, 200)
        const next = await pull(restored, cursor)
        assert.deepEqual(
          next.body.decisions.map((x: { fingerprint: string }) => x.fingerprint),
          [fpOf(1)],
          'a decision made after the restore is newer than the cursor',
        )
        let text = (await call(tls, restored.base, '/metrics')).body as string
        assert.match(text, /^edgegate_policy_cursor_ahead_total 2$/m, 'r1 and r2')
        // That decision moved the clock past every cursor, yet a gate that pulled before the
        // restore (here two minutes before) is still named: its cursor lies between the
        // database's newest time and the time it was read, which no database issued.
        const twoMinutesAgo = new Date(Date.now() - 120_000).toISOString()
        const later = await pull(restored, twoMinutesAgo)
        assert.deepEqual(
          later.body.decisions.map((x: { fingerprint: string }) => x.fingerprint),
          [fpOf(1)],
        )
        assert.equal(later.body.resync, true)
        text = (await call(tls, restored.base, '/metrics')).body as string
        assert.match(text, /^edgegate_policy_cursor_ahead_total 3$/m)
        const current = await pull(restored, next.body.cursor)
        assert.deepEqual([current.body.decisions, current.body.resync], [[], undefined])
        text = (await call(tls, restored.base, '/metrics')).body as string
        assert.match(text, /^edgegate_policy_cursor_ahead_total 3$/m, 'a cursor the database issued is not named')
      } finally {
        await restored.stop()
        await other.stop()
        await alerts.close()
      }
      // A restart on a healthy database names nobody, whatever the cursors' age.
      const again = await startEdgegate(database, tls)
      try {
        const all = await pull(again)
        assert.equal((await pull(again, all.body.cursor)).status, 200)
        const text = (await call(tls, again.base, '/metrics')).body as string
        assert.match(text, /^edgegate_policy_cursor_ahead_total 0$/m)
      } finally {
        await again.stop()
      }
    })
  })
}

describe('decision clock on postgres', () => {
  test('a writer holding the clock blocks later writers, so commit order is time order', async () => {
    const url = await newDatabase('postgres', pg.get)
    const d = await openEdgeDatabase(url, 4)
    try {
      const row = (fp: string, at: number): NewDecision => ({
        scope_type: 'instance',
        scope_id: 'c1',
        fingerprint: fp,
        status: 'approved',
        label: '',
        updated_us: at,
        actor: 'test',
        source: 'manual',
        expires_ms: null,
        evidence: null,
      })
      let release!: () => void
      const hold = new Promise<void>((r) => {
        release = r
      })
      let ticked = false
      // T1 takes its time between taking a clock value and committing (a slow commit).
      const t1 = d.db.transaction().execute(async (trx) => {
        const at = await tickClock(trx, 'postgres')
        await upsertDecision(trx, row(fpOf(1), at))
        ticked = true
        await hold
        return at
      })
      await waitFor('T1 holds the clock', async () => ticked)
      const t2 = d.db.transaction().execute(async (trx) => {
        const at = await tickClock(trx, 'postgres')
        await upsertDecision(trx, row(fpOf(2), at))
        return at
      })
      const waiting = async () =>
        Number(
          (
            await sql<{
              n: number
            }>`select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()`.execute(
              d.db,
            )
          ).rows[0]!.n,
        ) > 0
      await waitFor('T2 waits for the clock row', waiting)
      // A follower now sees neither decision: T2 cannot commit a later time before T1 commits.
      assert.deepEqual(await decisionsSince(d.db, 'c1', 0, 10), [])
      release()
      const [a1, a2] = await Promise.all([t1, t2])
      assert.ok(a2 > a1)
      assert.deepEqual(
        (await decisionsSince(d.db, 'c1', 0, 10)).map((r) => r.fingerprint),
        [fpOf(1), fpOf(2)],
      )
    } finally {
      await d.close()
    }
  })
})
