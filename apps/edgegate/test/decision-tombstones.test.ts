/**
 * Decision deletes keep a tombstone (migration 0002), on SQLite and PostgreSQL: an older
 * database upgrades with its decisions live, a delete advances the decision clock in its own
 * transaction and is audited, administration reads skip the tombstone while the policy query
 * returns it as pending, and a later verdict revives the row.
 */
import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { migrate, openDatabase } from '@gatehouse/kit'
import { sql } from 'kysely'
import { migrations } from '../src/db/migrations.ts'
import { openEdgeDatabase } from '../src/db/open.ts'
import { changeDecision, removeDecision } from '../src/decisions/service.ts'
import { decisionsFor, decisionsSince, getDecision, listDecisions } from '../src/decisions/store.ts'
import { addNode } from '../src/nodes/service.ts'
import { parseMicros } from '../src/timestamps.ts'
import { DIALECTS, lazyPostgres, newDatabase } from './helpers.ts'

const pg = lazyPostgres()
after(() => pg.stop())

const FP = '7'.repeat(32)

for (const dialect of DIALECTS) {
  describe(`decision tombstones on ${dialect}`, () => {
    test('an existing database upgrades: its decisions stay live and can then be deleted', async () => {
      const url = await newDatabase(dialect, pg.get)
      const old = await openDatabase<unknown>({ url })
      try {
        await migrate(old.db, { '0001_init': migrations(dialect)['0001_init']! })
        await sql`insert into decisions (scope_type, scope_id, fingerprint, status, label, updated_us, actor, source)
          values ('instance', 'u1', ${FP}, 'approved', 'old', 5, 'admin:x', 'manual')`.execute(old.db)
        await sql`update decision_clock set last_us = 5 where id = 1`.execute(old.db)
      } finally {
        await old.close()
      }
      const d = await openEdgeDatabase(url, 2)
      try {
        const row = await getDecision(d.db, 'u1', FP)
        assert.deepEqual([row?.status, row?.label, Number(row?.deleted)], ['approved', 'old', 0])
        await removeDecision(d.db, d.kind, 'u1', FP, 'admin:y')
        assert.equal(await getDecision(d.db, 'u1', FP), undefined)
        const [tomb] = await decisionsSince(d.db, 'u1', 5, 10)
        assert.deepEqual([tomb?.status, tomb?.label, tomb?.actor, Number(tomb?.deleted)], ['pending', '', 'admin:y', 1])
        assert.ok(Number(tomb?.updated_us) > 5)
      } finally {
        await d.close()
      }
    })

    test('delete: a fresh clock time, an audit entry, hidden from administration, revived by a verdict', async () => {
      const url = await newDatabase(dialect, pg.get)
      const d = await openEdgeDatabase(url, 2)
      try {
        await addNode(d.db, 't1', 'sshgate', { type: 'token' }, 'test')
        const approved = await changeDecision(d.db, d.kind, {
          instanceId: 't1',
          fingerprint: FP,
          status: 'approved',
          label: 'ci',
          actor: 'admin:a',
        })
        const clockBefore = Number(
          (await d.db.selectFrom('decision_clock').select('last_us').executeTakeFirstOrThrow()).last_us,
        )
        await removeDecision(d.db, d.kind, 't1', FP, 'admin:b')
        const clockAfter = Number(
          (await d.db.selectFrom('decision_clock').select('last_us').executeTakeFirstOrThrow()).last_us,
        )
        assert.ok(clockAfter > clockBefore, 'the delete moved the decision clock')
        const since = await decisionsSince(d.db, 't1', 0, 10)
        assert.equal(since.length, 1)
        assert.equal(Number(since[0]!.updated_us), clockAfter, 'the tombstone carries the clock time it took')
        assert.ok(Number(since[0]!.updated_us) > parseMicros(approved.updated_at)!)
        const audit = await d.db.selectFrom('audit_log').selectAll().where('action', '=', 'decision.delete').execute()
        assert.deepEqual(
          audit.map((a) => [a.actor, a.target]),
          [['admin:b', `t1/${FP}`]],
        )
        assert.equal(await getDecision(d.db, 't1', FP), undefined)
        assert.equal((await decisionsFor(d.db, [{ instance_id: 't1', fingerprint: FP }])).size, 0)
        assert.deepEqual(await listDecisions(d.db, { scopeId: 't1', limit: 10, offset: 0 }), [])
        // Absent for every further administration change except a verdict.
        await assert.rejects(removeDecision(d.db, d.kind, 't1', FP, 'admin:b'), { code: 'decision_not_found' })
        await assert.rejects(
          changeDecision(d.db, d.kind, { instanceId: 't1', fingerprint: FP, label: 'x', actor: 'admin:b' }),
          { code: 'decision_not_found' },
        )
        assert.equal(
          Number((await d.db.selectFrom('decision_clock').select('last_us').executeTakeFirstOrThrow()).last_us),
          clockAfter,
          'a refused change takes no clock time',
        )
        assert.equal(
          (await d.db.selectFrom('audit_log').selectAll().where('action', '=', 'decision.delete').execute()).length,
          1,
        )
        const revived = await changeDecision(d.db, d.kind, {
          instanceId: 't1',
          fingerprint: FP,
          status: 'pending',
          actor: 'admin:c',
        })
        assert.deepEqual([revived.status, revived.label, revived.actor], ['pending', '', 'admin:c'])
        const live = await getDecision(d.db, 't1', FP)
        assert.equal(Number(live?.deleted), 0)
        assert.equal((await listDecisions(d.db, { scopeId: 't1', status: 'pending', limit: 10, offset: 0 })).length, 1)
      } finally {
        await d.close()
      }
    })
  })
}
