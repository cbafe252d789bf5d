/**
 * Expiring manual decisions, on SQLite and PostgreSQL: `expires_in` in the API and `--for` in
 * the CLI set an expiry the policy sends with the decision; a label-only change keeps it, a new
 * status without one makes the decision permanent; past it the server's sweep deletes the
 * decision (actor `expiry`, audited), so gates pull it as pending; bad durations change nothing.
 */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { openEdgeDatabase } from '../src/db/open.ts'
import {
  call,
  cli,
  DIALECTS,
  type Edgegate,
  fileServices,
  newDatabase,
  seed,
  startEdgegate,
  waitFor,
} from './helpers.ts'

const { pg, tls } = fileServices()
const FP = 'e'.repeat(32)
const HOUR = 3_600_000

for (const dialect of DIALECTS) {
  describe(`expiring decisions on ${dialect}`, () => {
    test('expires_in: sent with the decision, kept by a label change, cleared by a new status, ended by the sweep', async (t) => {
      const database = await newDatabase(dialect, pg.get)
      const { tokens, admin } = await seed(database, [{ id: 'x1', kind: 'sshgate' }])
      const server: Edgegate = await startEdgegate(database, tls)
      t.after(() => server.stop())
      const put = (body: Record<string, unknown>) =>
        call(tls, server.base, `/api/decisions/x1/${FP}`, { method: 'PUT', token: admin, body })
      const pull = async () =>
        (await call(tls, server.base, '/v1/policy?instance_id=x1', { token: tokens.x1 })).body.decisions.find(
          (d: { fingerprint: string }) => d.fingerprint === FP,
        )

      const blocked = await put({ status: 'blocked', label: 'investigating', expires_in: '4h' })
      assert.equal(blocked.status, 200, JSON.stringify(blocked.body))
      const until = Date.parse(blocked.body.expires_at)
      assert.ok(Math.abs(until - (Date.now() + 4 * HOUR)) < 60_000, blocked.body.expires_at)
      assert.equal((await pull()).expires_at, blocked.body.expires_at, 'the policy sends it')

      const relabelled = await put({ label: 'still investigating' })
      assert.equal(relabelled.body.expires_at, blocked.body.expires_at, 'a label change keeps the expiry')
      const shorter = await put({ expires_in: '30m' })
      assert.equal(shorter.body.status, 'blocked')
      assert.ok(Date.parse(shorter.body.expires_at) < until, 'an expiry alone changes only the expiry')
      const permanent = await put({ status: 'blocked' })
      assert.equal(permanent.body.expires_at, undefined, 'a new status without one is permanent')

      for (const bad of ['forever', '30s', '9000h', '']) {
        const res = await put({ status: 'approved', expires_in: bad })
        assert.equal(res.status, 400, bad)
        assert.equal(res.body.error.code, 'invalid_expiry')
      }
      const unchanged = await call(tls, server.base, `/api/decisions/x1/${FP}`, { token: admin })
      assert.deepEqual([unchanged.body.status, unchanged.body.expires_at], ['blocked', undefined])

      // Due: the sweep (every 10 s) deletes it; the gate pulls a pending decision by `expiry`.
      assert.equal((await put({ status: 'blocked', expires_in: '1m' })).status, 200)
      const d = await openEdgeDatabase(database, 1)
      try {
        await d.db
          .updateTable('decisions')
          .set({ expires_ms: Date.now() - 1000 })
          .where('fingerprint', '=', FP)
          .execute()
      } finally {
        await d.close()
      }
      await waitFor(
        'the sweep to end it',
        async () => (await call(tls, server.base, `/api/decisions/x1/${FP}`, { token: admin })).status === 404,
        30_000,
      )
      const ended = await pull()
      assert.deepEqual([ended.status, ended.actor, ended.label, ended.expires_at], ['pending', 'expiry', '', undefined])
      const audit = await call(tls, server.base, '/api/audit?limit=5', { token: admin })
      assert.ok(
        audit.body.entries.some(
          (e: { actor: string; action: string; target: string }) =>
            e.actor === 'expiry' && e.action === 'decision.expire' && e.target === `x1/${FP}`,
        ),
        JSON.stringify(audit.body),
      )
    })

    test('the CLI: --for sets the expiry, the list shows it, a bad duration is a usage error', async () => {
      const database = await newDatabase(dialect, pg.get)
      await seed(database, [{ id: 'x2', kind: 'sshgate' }])
      const env = { EDGEGATE_DATABASE: database }
      const blocked = await cli(['decision', 'block', '--instance', 'x2', '--for', '24h', FP], env)
      assert.equal(blocked.code, 0, blocked.stderr)
      // Both times as `decision list` shows them (milliseconds), not the wire's microseconds.
      const ms = '\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z'
      assert.match(blocked.stdout, new RegExp(`^x2 ${FP} blocked at ${ms} until ${ms}\\n$`))
      const listed = await cli(['decision', 'list', '--json'], env)
      const row = JSON.parse(listed.stdout).find((x: { fingerprint: string }) => x.fingerprint === FP)
      assert.ok(Math.abs(Date.parse(row.expires_at) - (Date.now() + 24 * HOUR)) < 60_000, row.expires_at)
      const bad = await cli(['decision', 'approve', '--instance', 'x2', '--for', '10s', FP], env)
      assert.equal(bad.code, 2)
      assert.match(bad.stderr, /for: 10s is not a duration from 1m to 8760h/)
      const still = JSON.parse((await cli(['decision', 'list', '--json'], env)).stdout)
      assert.equal(still.find((x: { fingerprint: string }) => x.fingerprint === FP).status, 'blocked')
    })
  })
}
