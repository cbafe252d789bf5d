/**
 * `edgegate enforcement status|disable|enable` and `edgegate pair list|add|remove` as a user
 * runs them (child processes), on SQLite and PostgreSQL: the kill switch revokes the automated
 * blocks and is audited with the CLI user, pairings are validated and change the evidence.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { type EdgeDatabase, openEdgeDatabase } from '../src/db/open.ts'
import { getDecision } from '../src/decisions/store.ts'
import { runPass } from '../src/enforcement/service.ts'
import { evidenceMatches } from '../src/web/evidence.ts'
import { cli, DIALECTS, type Json, lazyPostgres, newDatabase } from './helpers.ts'
import { MIN, scanner, settings, sighting, signal } from './web-fixtures.ts'

const pg = lazyPostgres()
after(() => pg.stop())
const FP = 't13d_cli'

for (const dialect of DIALECTS) {
  describe(`edgegate enforcement and pair commands on ${dialect}`, () => {
    let database: string
    let d: EdgeDatabase
    const run = (...args: string[]) => cli(args, { EDGEGATE_DATABASE: database })
    const json = async (...args: string[]): Promise<Json> => {
      const r = await run(...args, '--json')
      assert.equal(r.code, 0, r.stderr)
      return JSON.parse(r.stdout)
    }

    before(async () => {
      database = await newDatabase(dialect, pg.get)
      assert.equal((await run('migrate')).code, 0)
      for (const [kind, id] of [
        ['tlsgate', 'tls-1'],
        ['websignal', 'web-1'],
        ['sshgate', 'ssh-1'],
      ]) {
        const r = await run('node', 'add', '--kind', kind!, id!)
        assert.equal(r.code, 0, r.stderr)
      }
      d = await openEdgeDatabase(database, 2)
    })
    after(() => d?.close())

    test('enforcement disable revokes the automated blocks, blocks new ones until enable; audited', async () => {
      const t0 = Date.now()
      await scanner(d, 'tls-1', FP, t0 - MIN)
      assert.equal((await runPass(d.db, d.kind, settings('enforce'), t0)).blocked, 1)
      const before = await json('enforcement', 'status')
      assert.deepEqual([before.kill_switch.engaged, before.automated_blocks], [false, 1])
      assert.deepEqual(before.automated_blocks_by_gate, { 'tls-1': 1 })
      const text = await run('enforcement', 'status')
      assert.match(text.stdout, /kill switch: released/)
      assert.match(text.stdout, /automated blocks in force: 1 \(tls-1 1\)/)

      const off = await json('enforcement', 'disable')
      assert.deepEqual([off.revoked, off.kill_switch.engaged, off.automated_blocks], [1, true, 0])
      assert.match(off.kill_switch.actor, /^cli:/)
      const revoked = await d.db.selectFrom('decisions').selectAll().where('fingerprint', '=', FP).executeTakeFirst()
      assert.deepEqual([revoked?.status, revoked?.deleted, revoked?.label], ['pending', 1, 'kill switch engaged'])
      // Engaged: a pass with newer evidence still writes nothing.
      await signal(d, 'web-1', '198.51.1.7', t0)
      assert.equal((await runPass(d.db, d.kind, settings('enforce'), t0 + 1000)).blocked, 0)
      const engaged = await run('enforcement', 'status')
      assert.match(engaged.stdout, /kill switch: .*engaged.* by cli:/)

      const on = await run('enforcement', 'enable')
      assert.equal(on.code, 0, on.stderr)
      assert.match(on.stdout, /kill switch released/)
      assert.equal((await runPass(d.db, d.kind, settings('enforce'), t0 + 2000)).blocked, 1)
      assert.equal((await getDecision(d.db, 'tls-1', FP))?.status, 'blocked')

      const audit = await d.db
        .selectFrom('audit_log')
        .select(['actor', 'action'])
        .where('action', 'like', 'web_enforcement.kill_switch.%')
        .orderBy('at_ms')
        .execute()
      assert.deepEqual(
        audit.map((a) => a.action),
        ['web_enforcement.kill_switch.engage', 'web_enforcement.kill_switch.release'],
      )
      assert.ok(audit.every((a) => a.actor.startsWith('cli:')))
    })

    test('pair add|list|remove: validated, audited, and the evidence follows', async () => {
      const t0 = Date.now()
      // A TLS client without SNI: only a pairing makes web-1's signal match it.
      await sighting(d, 'tls-1', 't13d_nosni', '192.0.2.80', t0, '')
      await signal(d, 'web-1', '192.0.2.80', t0)
      const noSni = async () =>
        (await evidenceMatches(d.db, t0 - MIN, t0 + MIN)).filter((m) => m.fingerprint === 't13d_nosni').length

      assert.deepEqual(await json('pair', 'list'), [])
      assert.equal(await noSni(), 0)
      const add = await run('pair', 'add', 'web-1', 'tls-1')
      assert.equal(add.code, 0, add.stderr)
      assert.match(add.stdout, /web-1 paired with tls-1/)
      assert.equal(await noSni(), 1, 'the pairing correlates the stored signal with the SNI-less sighting')
      assert.equal((await json('pair', 'add', 'web-1', 'tls-1')).added, false, 'idempotent')
      const list = await json('pair', 'list')
      assert.deepEqual(
        list.map((p: Json) => [p.websignal_id, p.tlsgate_id]),
        [['web-1', 'tls-1']],
      )
      assert.match(list[0].actor, /^cli:/)
      assert.match((await run('pair', 'list')).stdout, /WEBSIGNAL\s+TLSGATE/)

      for (const [w, g] of [
        ['ssh-1', 'tls-1'],
        ['web-1', 'ssh-1'],
        ['web-1', 'nope'],
      ]) {
        const bad = await run('pair', 'add', w!, g!)
        assert.equal(bad.code, 1, `${w} ${g}`)
        assert.match(bad.stderr, /is not a registered (websignal|tlsgate) node/)
        assert.equal(bad.stderr.trim().split('\n').length, 1)
      }
      const usage = await run('pair', 'add', 'web-1')
      assert.equal(usage.code, 2)

      const removed = await run('pair', 'remove', 'web-1', 'tls-1')
      assert.equal(removed.code, 0, removed.stderr)
      assert.equal(await noSni(), 0, 'removing the pairing removes what only it matched')
      const again = await run('pair', 'remove', 'web-1', 'tls-1')
      assert.equal(again.code, 1)
      assert.match(again.stderr, /no such pairing/)
      const audit = await d.db
        .selectFrom('audit_log')
        .select(['action', 'target'])
        .where('action', 'like', 'web_pair.%')
        .orderBy('at_ms')
        .execute()
      assert.deepEqual(
        audit.map((a) => a.action),
        ['web_pair.add', 'web_pair.add', 'web_pair.remove'],
      )
    })
  })
}
