/**
 * `edgegate node remove` as a user runs it, on SQLite and PostgreSQL: a node never seen goes at
 * once; one seen must be disabled first; what is stored under its id goes only with --purge, and
 * its decisions become tombstones that a gate returning under the same id pulls as pending.
 */
import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { openEdgeDatabase } from '../src/db/open.ts'
import { runPass } from '../src/enforcement/service.ts'
import { evidenceMatches } from '../src/web/evidence.ts'
import {
  call,
  cli,
  DIALECTS,
  type Json,
  lazyPostgres,
  makeTls,
  newDatabase,
  observation,
  seed,
  startEdgegate,
  waitFor,
} from './helpers.ts'
import { MIN, scanner, settings } from './web-fixtures.ts'

const tls = makeTls()
const pg = lazyPostgres()
after(async () => {
  await pg.stop()
  tls.ca.remove()
})

const A = 'a'.repeat(32)
const B = 'b'.repeat(32)
const C = 'c'.repeat(32)

for (const dialect of DIALECTS) {
  describe(`edgegate node remove (${dialect})`, () => {
    test('a node never seen goes at once; a seen one is disabled first, and its data goes only with --purge', async () => {
      const database = await newDatabase(dialect, pg.get)
      const run = (...args: string[]) => cli(args, { EDGEGATE_DATABASE: database })
      assert.equal((await run('migrate')).code, 0)

      // A mistyped id, never seen: one command.
      assert.equal((await run('node', 'add', '--kind', 'sshgate', 'edge-typo')).code, 0)
      const typo = await run('node', 'remove', 'edge-typo')
      assert.deepEqual([typo.code, typo.stdout, typo.stderr], [0, 'node edge-typo (sshgate) removed\n', ''])
      const nodes = async () => JSON.parse((await run('node', 'list', '--json')).stdout).map((n: Json) => n.instance_id)
      assert.deepEqual(await nodes(), [])
      const again = await run('node', 'remove', 'edge-typo')
      assert.deepEqual(
        [again.code, again.stderr],
        [1, 'edgegate: no node edge-typo (edgegate node list shows them all)\n'],
      )

      const { tokens, admin } = await seed(database, [
        { id: 'edge-1', kind: 'sshgate' },
        { id: 'edge-2', kind: 'sshgate' },
      ])
      const gate = await startEdgegate(database, tls)
      try {
        for (const [id, fps] of [
          ['edge-1', [A, B, C]],
          ['edge-2', [A]],
        ] as const) {
          const posted = await call(tls, gate.base, `/v1/observations/batch?instance_id=${id}`, {
            body: { instance_id: id, observations: fps.map((fp) => observation(fp)) },
            token: tokens[id]!,
          })
          assert.equal(posted.status, 200, JSON.stringify(posted.body))
        }
        assert.equal((await run('decision', 'approve', '--instance', 'edge-1', A)).code, 0)
        assert.equal((await run('decision', 'block', '--instance', 'edge-1', B)).code, 0)
        assert.equal((await run('decision', 'block', '--instance', 'edge-2', A)).code, 0)
        const policy = (token: string, id = 'edge-1') => call(tls, gate.base, `/v1/policy?instance_id=${id}`, { token })
        const pulled = await policy(tokens['edge-1']!)
        assert.equal(pulled.status, 200)
        // The guard records when a node was last seen in the background.
        await waitFor(
          'edge-1 seen',
          async () => JSON.parse((await run('node', 'show', 'edge-1', '--json')).stdout).last_seen_at,
        )

        const active = await run('node', 'remove', 'edge-1')
        assert.deepEqual(
          [active.code, active.stderr],
          [
            1,
            'edgegate: node edge-1 is active: disable it first (edgegate node disable edge-1), so its gate stops syncing, then remove it\n',
          ],
        )
        assert.equal((await run('node', 'disable', 'edge-1')).code, 0)
        const held = await run('node', 'remove', 'edge-1')
        assert.deepEqual(
          [held.code, held.stderr],
          [
            1,
            'edgegate: node edge-1 still has 3 fingerprints, 2 decisions: remove them with it (edgegate node remove --purge edge-1), or keep the node disabled\n',
          ],
        )
        const fingerprints = async (id: string) => {
          const r = await run('fingerprint', 'list', '--instance', id, '--json')
          assert.equal(r.code, 0, r.stderr)
          return JSON.parse(r.stdout).map((f: Json) => f.fingerprint)
        }
        assert.equal((await fingerprints('edge-1')).length, 3, 'a refused removal removes nothing')
        assert.deepEqual(await nodes(), ['edge-1', 'edge-2'])

        const purged = await run('node', 'remove', '--purge', 'edge-1')
        assert.equal(purged.code, 0, purged.stderr)
        assert.equal(
          purged.stdout,
          'node edge-1 (sshgate) removed with 3 fingerprints, 2 decisions\nIts decisions stay as deletions until retention removes them: a gate that returns under this id drops them.\n',
        )
        assert.deepEqual(await nodes(), ['edge-2'])
        assert.equal((await policy(tokens['edge-1']!)).status, 401, 'its token stops working')
        const audit = await call(tls, gate.base, '/api/audit?limit=50', { token: admin })
        assert.ok(
          audit.body.entries.some((e: Json) => e.action === 'node.remove_purge' && e.target === 'edge-1'),
          JSON.stringify(audit.body),
        )
        assert.ok(audit.body.entries.some((e: Json) => e.action === 'node.remove' && e.target === 'edge-typo'))

        // The other node's data is untouched.
        assert.deepEqual(await fingerprints('edge-2'), [A])
        const left = JSON.parse((await run('decision', 'list', '--json')).stdout)
        assert.deepEqual(
          left.map((d: Json) => [d.scope_id, d.fingerprint, d.status]),
          [['edge-2', A, 'blocked']],
        )

        // Added again under the same id: nothing of the old node, and its gate's verdicts are
        // revoked by the tombstones a full pull carries.
        const readd = await run('node', 'add', '--kind', 'sshgate', 'edge-1')
        assert.equal(readd.code, 0, readd.stderr)
        const token = /token: (\S+)/.exec(readd.stdout)![1]!
        assert.deepEqual(await fingerprints('edge-1'), [])
        const full = await policy(token)
        assert.equal(full.status, 200)
        assert.deepEqual(full.body.decisions.map((d: Json) => [d.fingerprint, d.status, d.label]).sort(), [
          [A, 'pending', ''],
          [B, 'pending', ''],
        ])
        const times = full.body.decisions.map((x: Json) => x.updated_at)
        assert.equal(new Set(times).size, 2, `each tombstone has a time of its own: ${times}`)
      } finally {
        await gate.stop()
      }

      // Nothing is left under the id in any table but the tombstones and the audit log.
      const d = await openEdgeDatabase(database, 2)
      try {
        for (const table of ['fingerprints', 'web_sightings', 'signals', 'smtp_reports'] as const) {
          const rows = await d.db.selectFrom(table).select('instance_id').where('instance_id', '=', 'edge-1').execute()
          assert.deepEqual(rows, [], table)
        }
        const live = await d.db
          .selectFrom('decisions')
          .select('fingerprint')
          .where('scope_id', '=', 'edge-1')
          .where('deleted', '=', 0)
          .execute()
        assert.deepEqual(live, [])
      } finally {
        await d.close()
      }
    })

    test('web nodes: their signals, sightings, evidence, pairings and automated blocks go with --purge', async () => {
      const database = await newDatabase(dialect, pg.get)
      const run = (...args: string[]) => cli(args, { EDGEGATE_DATABASE: database })
      assert.equal((await run('migrate')).code, 0)
      for (const [kind, id] of [
        ['tlsgate', 'tls-1'],
        ['tlsgate', 'tls-2'],
        ['websignal', 'web-1'],
      ] as const) {
        assert.equal((await run('node', 'add', '--kind', kind, id)).code, 0)
      }
      assert.equal((await run('pair', 'add', 'web-1', 'tls-1')).code, 0)
      const d = await openEdgeDatabase(database, 2)
      try {
        const t0 = Date.now()
        await scanner(d, 'tls-1', 't13d_one', t0 - MIN)
        await scanner(d, 'tls-2', 't13d_two', t0 - MIN, 2)
        assert.equal((await runPass(d.db, d.kind, settings('enforce'), t0)).blocked, 2)
        const gates = async () =>
          [...new Set((await evidenceMatches(d.db, t0 - 2 * MIN, t0 + MIN)).map((m) => m.gate))].sort()
        assert.deepEqual(await gates(), ['tls-1', 'tls-2'])

        const held = await run('node', 'remove', 'web-1')
        assert.deepEqual(
          [held.code, held.stderr],
          [
            1,
            'edgegate: node web-1 still has 6 signals: remove them with it (edgegate node remove --purge web-1), or keep the node disabled\n',
          ],
        )
        const tls = await run('node', 'remove', '--purge', 'tls-1')
        assert.deepEqual(
          [tls.code, tls.stdout.split('\n')[0]],
          [0, 'node tls-1 (tlsgate) removed with 1 decision, 2 web sightings'],
        )
        assert.deepEqual(await gates(), ['tls-2'], 'its evidence went with it')
        assert.deepEqual(JSON.parse((await run('pair', 'list', '--json')).stdout), [], 'and its pairing')
        const decisions = JSON.parse((await run('decision', 'list', '--json')).stdout)
        assert.deepEqual(
          decisions.map((x: Json) => [x.scope_id, x.fingerprint, x.status]),
          [['tls-2', 't13d_two', 'blocked']],
        )

        const web = await run('node', 'remove', '--purge', 'web-1')
        assert.equal(web.code, 0, web.stderr)
        assert.equal(web.stdout, 'node web-1 (websignal) removed with 6 signals\n')
        assert.deepEqual(await gates(), [], 'the signals behind the remaining evidence went too')
        for (const [table, column] of [
          ['signals', 'instance_id'],
          ['signal_publishers', 'instance_id'],
          ['web_sightings', 'instance_id'],
          ['web_evidence', 'node'],
        ] as const) {
          const rows = await d.db
            .selectFrom(table)
            .selectAll()
            .where(column as never, 'in', ['web-1', 'tls-1'] as never)
            .execute()
          assert.deepEqual(rows, [], table)
        }
      } finally {
        await d.close()
      }
    })

    test('a node of another kind: rotate-token says how to change it, remove and add again does', async () => {
      const database = await newDatabase(dialect, pg.get)
      const run = (...args: string[]) => cli(args, { EDGEGATE_DATABASE: database })
      assert.equal((await run('migrate')).code, 0)
      assert.equal((await run('node', 'add', '--kind', 'sshgate', 'tls-1')).code, 0)
      const wrong = await run('node', 'rotate-token', '--kind', 'tlsgate', 'tls-1')
      assert.equal(wrong.code, 1)
      assert.match(wrong.stderr, /remove it with edgegate node remove and add it again with --kind tlsgate/)
      assert.equal((await run('node', 'remove', 'tls-1')).code, 0)
      const added = await run('node', 'add', '--kind', 'tlsgate', 'tls-1')
      assert.equal(added.code, 0, added.stderr)
      assert.equal(JSON.parse((await run('node', 'show', 'tls-1', '--json')).stdout).kind, 'tlsgate')
    })
  })
}
