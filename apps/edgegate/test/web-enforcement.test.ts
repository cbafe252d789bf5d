/**
 * The web enforcement controller's rules on SQLite and PostgreSQL, with the pass's clock given
 * explicitly: canary vs enforce coverage, renewal only on newer evidence, expiry and the kill
 * switch as explicit pending decisions in the policy query, manual decisions never
 * overwritten, a failure mid-pass leaving nothing behind, and (PostgreSQL) one pass at a time.
 */
import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { sql } from 'kysely'
import { openEdgeDatabase } from '../src/db/open.ts'
import { changeDecision } from '../src/decisions/service.ts'
import { decisionsSince, getDecision } from '../src/decisions/store.ts'
import { runPass, setKillSwitch } from '../src/enforcement/service.ts'
import { automatedBlocks, CONTROLLER_LOCK_KEY, readState } from '../src/enforcement/store.ts'
import { addNode } from '../src/nodes/service.ts'
import { DIALECTS, lazyPostgres, newDatabase } from './helpers.ts'
import { MIN, scanner, settings, signal } from './web-fixtures.ts'

const pg = lazyPostgres()
after(() => pg.stop())

const FP1 = 't13d_one'
const FP2 = 't13d_two'

async function fresh(dialect: (typeof DIALECTS)[number]) {
  const d = await openEdgeDatabase(await newDatabase(dialect, pg.get), 4)
  for (const [id, kind] of [
    ['tls-1', 'tlsgate'],
    ['tls-2', 'tlsgate'],
    ['web-1', 'websignal'],
  ] as const) {
    await addNode(d.db, id, kind, { type: 'token' }, 'test')
  }
  return d
}

for (const dialect of DIALECTS) {
  describe(`web enforcement on ${dialect}`, () => {
    test('canary covers only the listed gates; enforce covers every active TLS gate', async () => {
      const d = await fresh(dialect)
      try {
        const t0 = Date.now()
        await scanner(d, 'tls-1', FP1, t0 - MIN)
        await scanner(d, 'tls-2', FP2, t0 - MIN, 2)
        const canary = await runPass(d.db, d.kind, settings('canary', ['tls-2']), t0)
        assert.deepEqual([canary.ran, canary.blocked], [true, 1])
        assert.equal(await getDecision(d.db, 'tls-1', FP1), undefined)
        const block = await getDecision(d.db, 'tls-2', FP2)
        assert.equal(block?.status, 'blocked')
        assert.equal(block?.source, 'web-controller')
        assert.equal(block?.actor, 'controller:web')
        assert.equal(Number(block?.expires_ms), t0 + 60 * MIN)
        const evidence = JSON.parse(block!.evidence!)
        assert.deepEqual([evidence.signals, evidence.network_count, evidence.cross_site], [3, 2, true])
        assert.equal(evidence.last_ms, t0 - MIN + 1)
        assert.doesNotMatch(block!.evidence!, /target|uri|path|agent/)

        const enforce = await runPass(d.db, d.kind, settings('enforce'), t0 + 1000)
        assert.deepEqual([enforce.blocked, enforce.renewed, enforce.revoked], [1, 0, 0])
        assert.equal((await getDecision(d.db, 'tls-1', FP1))?.status, 'blocked')
        // A disabled gate is not covered: its block is revoked.
        await d.db.updateTable('nodes').set({ active: 0 }).where('instance_id', '=', 'tls-1').execute()
        const after1 = await runPass(d.db, d.kind, settings('enforce'), t0 + 2000)
        assert.deepEqual([after1.blocked, after1.revoked], [0, 1])
        const [revoked] = await decisionsSince(d.db, 'tls-1', 0, 10)
        assert.deepEqual([revoked?.status, revoked?.label], ['pending', 'gate not covered by web enforcement'])
      } finally {
        await d.close()
      }
    })

    test('renewal only on newer evidence; expiry reaches the policy as pending; not recreated from old evidence', async () => {
      const d = await fresh(dialect)
      try {
        const t0 = Date.now()
        const s = settings('enforce')
        await scanner(d, 'tls-1', FP1, t0 - 2 * MIN)
        assert.equal((await runPass(d.db, d.kind, s, t0)).blocked, 1)
        const first = await getDecision(d.db, 'tls-1', FP1)
        // Same evidence: nothing written, the policy time stays.
        const same = await runPass(d.db, d.kind, s, t0 + MIN)
        assert.deepEqual([same.blocked, same.renewed, same.revoked], [0, 0, 0])
        assert.equal(Number((await getDecision(d.db, 'tls-1', FP1))?.updated_us), Number(first?.updated_us))
        // A newer signal: renewed with a new expiry and a new time.
        await signal(d, 'web-1', '198.51.1.7', t0 + MIN)
        const renew = await runPass(d.db, d.kind, s, t0 + 2 * MIN)
        assert.equal(renew.renewed, 1)
        const renewed = await getDecision(d.db, 'tls-1', FP1)
        assert.equal(Number(renewed?.expires_ms), t0 + 62 * MIN)
        assert.ok(Number(renewed?.updated_us) > Number(first?.updated_us))
        // Past the expiry: an explicit pending for the gate, hidden from administration.
        const cursor = Number(renewed?.updated_us)
        const expire = await runPass(d.db, d.kind, s, t0 + 63 * MIN)
        assert.deepEqual([expire.blocked, expire.revoked], [0, 1])
        assert.equal(await getDecision(d.db, 'tls-1', FP1), undefined)
        const pulled = await decisionsSince(d.db, 'tls-1', cursor, 10)
        assert.deepEqual(
          pulled.map((r) => [r.fingerprint, r.status, r.label]),
          [[FP1, 'pending', 'automated block expired']],
        )
        // The old evidence is still in a wide window: it does not recreate the block.
        const wide = { ...s, windowMs: 30 * MIN }
        assert.equal((await runPass(d.db, d.kind, wide, t0 + 20 * MIN)).blocked, 0)
      } finally {
        await d.close()
      }
    })

    test('manual decisions are never overwritten; a deleted manual decision counts as none', async () => {
      const d = await fresh(dialect)
      try {
        const t0 = Date.now()
        await scanner(d, 'tls-1', FP1, t0 - MIN)
        await scanner(d, 'tls-2', FP2, t0 - MIN, 2)
        const approved = await changeDecision(d.db, d.kind, {
          instanceId: 'tls-1',
          fingerprint: FP1,
          status: 'approved',
          actor: 'admin:a',
        })
        const pass = await runPass(d.db, d.kind, settings('enforce'), t0)
        assert.equal(pass.blocked, 1)
        const still = await getDecision(d.db, 'tls-1', FP1)
        assert.deepEqual([still?.status, still?.source, still?.actor], ['approved', 'manual', 'admin:a'])
        assert.equal(still?.updated_us !== undefined && Number(still.updated_us) > 0, true)
        assert.equal(approved.status, 'approved')
        // An administrator's verdict on an automated block makes it manual: the controller leaves it.
        await changeDecision(d.db, d.kind, {
          instanceId: 'tls-2',
          fingerprint: FP2,
          status: 'pending',
          actor: 'admin:b',
        })
        await signal(d, 'web-1', '198.51.2.7', t0 + MIN)
        const next = await runPass(d.db, d.kind, settings('enforce'), t0 + 2 * MIN)
        assert.deepEqual([next.blocked, next.renewed, next.revoked], [0, 0, 0])
        assert.equal((await getDecision(d.db, 'tls-2', FP2))?.status, 'pending')
      } finally {
        await d.close()
      }
    })

    test('kill switch: revokes at once, audited, keeps passes from blocking until released', async () => {
      const d = await fresh(dialect)
      try {
        const t0 = Date.now()
        await scanner(d, 'tls-1', FP1, t0 - MIN)
        await scanner(d, 'tls-2', FP2, t0 - MIN, 2)
        assert.equal((await runPass(d.db, d.kind, settings('enforce'), t0)).blocked, 2)
        const { revoked } = await setKillSwitch(d.db, d.kind, true, 'admin:ops', t0 + 1000)
        assert.equal(revoked, 2)
        assert.equal((await readState(d.db)).killSwitch, true)
        for (const [gate, fp] of [
          ['tls-1', FP1],
          ['tls-2', FP2],
        ]) {
          const rows = await decisionsSince(d.db, gate!, 0, 10)
          assert.deepEqual(
            rows.map((r) => [r.fingerprint, r.status, r.label]),
            [[fp, 'pending', 'kill switch engaged']],
          )
        }
        await signal(d, 'web-1', '198.51.1.7', t0 + MIN)
        const killed = await runPass(d.db, d.kind, settings('enforce'), t0 + 2 * MIN)
        assert.deepEqual([killed.mode, killed.blocked], ['disabled', 0])
        await setKillSwitch(d.db, d.kind, false, 'admin:ops', t0 + 3 * MIN)
        const back = await runPass(d.db, d.kind, settings('enforce'), t0 + 4 * MIN)
        assert.deepEqual([back.mode, back.blocked], ['enforce', 1], 'newer evidence blocks again after release')
        const audit = await d.db
          .selectFrom('audit_log')
          .select(['actor', 'action'])
          .where('action', 'like', 'web_enforcement.kill%')
          .orderBy('at_ms')
          .execute()
        assert.deepEqual(
          audit.map((a) => [a.actor, a.action]),
          [
            ['admin:ops', 'web_enforcement.kill_switch.engage'],
            ['admin:ops', 'web_enforcement.kill_switch.release'],
          ],
        )
        // Restarting in disabled mode (the flag) revokes what is left on the first pass.
        const off = await runPass(d.db, d.kind, settings('disabled'), t0 + 5 * MIN)
        assert.deepEqual([off.mode, off.revoked], ['disabled', 1])
        assert.equal(
          (
            await d.db
              .selectFrom('decisions')
              .selectAll()
              .where('deleted', '=', 0)
              .where('status', '=', 'blocked')
              .execute()
          ).length,
          0,
        )
      } finally {
        await d.close()
      }
    })

    test('a failure mid-pass leaves whole batches: the committed one complete, the rest for the next pass', async () => {
      const d = await fresh(dialect)
      try {
        const t0 = Date.now()
        await scanner(d, 'tls-1', FP1, t0 - MIN)
        await scanner(d, 'tls-2', FP2, t0 - MIN, 2)
        const clock = async () =>
          Number((await d.db.selectFrom('decision_clock').selectAll().executeTakeFirst())?.last_us)
        const passes = async () =>
          (await d.db.selectFrom('audit_log').selectAll().where('action', '=', 'web_enforcement.pass').execute()).length
        const clockBefore = await clock()
        await assert.rejects(
          runPass(d.db, d.kind, settings('enforce'), t0, {
            chunkSize: 1,
            beforeWrite: (i) => {
              if (i === 1) throw new Error('crash after the first batch')
            },
          }),
          /crash after the first batch/,
        )
        const written = await d.db.selectFrom('decisions').selectAll().execute()
        assert.equal(written.length, 1, 'the first batch committed, the second never started')
        const [one] = written
        assert.deepEqual([one!.status, one!.source, one!.deleted], ['blocked', 'web-controller', 0])
        assert.ok(
          Number(one!.expires_ms) > t0 && JSON.parse(one!.evidence!).signals === 3,
          'complete: expiry and evidence',
        )
        assert.equal((await clock()) > clockBefore, true)
        assert.equal(await passes(), 1, 'the committed batch is audited with it')
        const next = await runPass(d.db, d.kind, settings('enforce'), t0)
        assert.deepEqual([next.blocked, next.renewed], [1, 0], 'the next pass does the rest, and only the rest')
        // The pass reads the live automated blocks in pages: a page of one finds both.
        assert.deepEqual(
          (await automatedBlocks(d.db, 1)).map((b) => `${b.scope_id}/${b.fingerprint}`),
          [`tls-1/${FP1}`, `tls-2/${FP2}`],
        )
      } finally {
        await d.close()
      }
    })

    test('a verdict or the kill switch between planning and a batch wins over the planned write', async () => {
      const d = await fresh(dialect)
      try {
        const t0 = Date.now()
        await scanner(d, 'tls-1', FP1, t0 - MIN)
        await scanner(d, 'tls-2', FP2, t0 - MIN, 2)
        const r = await runPass(d.db, d.kind, settings('enforce'), t0, {
          chunkSize: 1,
          beforeWrite: async (i) => {
            // Planned: block tls-1 and tls-2. Before the first batch an administrator approves
            // tls-1's fingerprint; before the second the kill switch is engaged.
            if (i === 0) {
              await changeDecision(d.db, d.kind, {
                instanceId: 'tls-1',
                fingerprint: FP1,
                status: 'approved',
                actor: 'admin:x',
              })
            } else await setKillSwitch(d.db, d.kind, true, 'admin:x', t0)
          },
        })
        assert.deepEqual([r.ran, r.blocked, r.renewed], [true, 0, 0])
        assert.equal((await getDecision(d.db, 'tls-1', FP1))?.status, 'approved')
        assert.equal(await getDecision(d.db, 'tls-2', FP2), undefined)
      } finally {
        await d.close()
      }
    })

    if (dialect === 'postgres') {
      test('one pass at a time: a held controller lock makes another pass skip', async () => {
        const d = await fresh(dialect)
        try {
          const t0 = Date.now()
          await scanner(d, 'tls-1', FP1, t0 - MIN)
          await d.db.transaction().execute(async (trx) => {
            await sql`select pg_advisory_xact_lock(${sql.lit(CONTROLLER_LOCK_KEY.toString())}::bigint)`.execute(trx)
            const busy = await runPass(d.db, d.kind, settings('enforce'), t0)
            assert.deepEqual([busy.ran, busy.blocked], [false, 0])
          })
          assert.equal(await getDecision(d.db, 'tls-1', FP1).then((r) => r?.status), undefined)
          const ran = await runPass(d.db, d.kind, settings('enforce'), t0)
          assert.deepEqual([ran.ran, ran.blocked], [true, 1])
        } finally {
          await d.close()
        }
      })
    }
  })
}
