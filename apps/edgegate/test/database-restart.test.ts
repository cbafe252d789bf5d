/**
 * A PostgreSQL restart under a running control plane: while the database is down the nodes'
 * uploads and policy pulls answer 503 with Retry-After (the nodes retry), the process stays up
 * with its background passes failing and logging, and once the database is back the same
 * uploads are stored and pulled on the first try.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { startPostgres } from '@gatehouse/testkit'
import { call, makeTls, observation, seed, startEdgegate } from './helpers.ts'

test('a PostgreSQL restart: 503 while it is down, the process stays up, then uploads and pulls resume', async (t) => {
  const tls = makeTls()
  t.after(() => tls.ca.remove())
  // A server of its own: halting a shared one would cut other tests' databases.
  const server = await startPostgres()
  t.after(() => server.stop())
  const database = await server.createDatabase()
  const { tokens, admin } = await seed(database, [{ id: 'ssh1', kind: 'sshgate' }])
  // Background passes every second, so they run (and fail) while the database is down.
  const eg = await startEdgegate(database, tls, ['--web-enforcement-interval', '1s', '--retention-interval', '1s'])
  t.after(() => eg.stop())
  const upload = (fp: string) =>
    call(tls, eg.base, '/v1/observations/batch?instance_id=ssh1', {
      method: 'POST',
      token: tokens.ssh1,
      body: { instance_id: 'ssh1', observations: [observation(fp)] },
    })
  const pull = () => call(tls, eg.base, '/v1/policy?instance_id=ssh1', { token: tokens.ssh1 })
  assert.equal((await upload('a'.repeat(32))).status, 200)
  assert.equal((await pull()).status, 200)

  await server.halt()
  const refused = await upload('b'.repeat(32))
  assert.equal(refused.status, 503)
  assert.equal(refused.body.error.code, 'unavailable')
  assert.equal(refused.headers['retry-after'], '5')
  assert.equal((await pull()).status, 503)
  assert.equal((await call(tls, eg.base, '/readyz')).status, 503)
  // The outage lasts long enough for each background pass to fail at least twice.
  await new Promise((r) => setTimeout(r, 2500))
  assert.equal(eg.child.process.exitCode, null, `edgegate exited:\n${eg.child.log()}`)

  await server.resume()
  assert.equal((await upload('b'.repeat(32))).status, 200)
  assert.equal((await pull()).status, 200)
  assert.equal((await call(tls, eg.base, '/readyz')).status, 200)
  const stored = await call(tls, eg.base, '/api/fingerprints?instance_id=ssh1', { token: admin })
  assert.deepEqual(stored.body.fingerprints.map((f: { fingerprint: string }) => f.fingerprint).sort(), [
    'a'.repeat(32),
    'b'.repeat(32),
  ])
  assert.equal(eg.child.process.exitCode, null)
  assert.doesNotMatch(eg.child.log(), /uncaught|unhandled/i)
})
