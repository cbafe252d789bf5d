/**
 * The database going away under a running control plane. A PostgreSQL restart: while the
 * database is down the nodes' uploads and policy pulls answer 503 with Retry-After (the nodes
 * retry), the process stays up with its background passes failing and logging, and once the
 * database is back the same uploads are stored and pulled on the first try. A full disk
 * (SQLite, or PostgreSQL's data): every write it refuses answers 503 (never 500) and leaves
 * nothing behind, every write acknowledged is stored, and the refused ones are stored when sent
 * again once space is freed. A database that can no longer write (a disk error under SQLite, a
 * PostgreSQL turned read-only): writes answer 503, the nodes' pulls and the console's reads go on,
 * and the background jobs, finding nothing due, write nothing and so log nothing.
 */
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { type TestContext, test } from 'node:test'
import {
  mountFailingDisk,
  mountSmallDisk,
  postgresDatabaseOn,
  type SmallDisk,
  startPostgres,
  waitFor,
} from '@gatehouse/testkit'
import { call, cli, makeTls, observation, seed, startEdgegate } from './helpers.ts'

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
  refusal(refused)
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

/**
 * Fill `disk` under a running edgegate on `database`: every upload and decision it refuses
 * answers 503 and leaves nothing, every one acknowledged is stored, and the refused ones are
 * stored when sent again once space is freed.
 */
async function writeOnFullDisk(t: TestContext, database: string, disk: SmallDisk): Promise<void> {
  const tls = makeTls()
  t.after(() => tls.ca.remove())
  const { tokens, admin } = await seed(database, [{ id: 'ssh1', kind: 'sshgate' }])
  const eg = await startEdgegate(database, tls, ['--web-enforcement-interval', '1s', '--retention-interval', '1s'])
  t.after(() => eg.stop())
  const fp = (i: number) => i.toString(16).padStart(32, '0')
  // 16 new fingerprints an upload (the most one takes): new rows, which need space the full disk does not have.
  const upload = (first: number) =>
    call(tls, eg.base, '/v1/observations/batch?instance_id=ssh1', {
      method: 'POST',
      token: tokens.ssh1,
      body: {
        instance_id: 'ssh1',
        observations: Array.from({ length: 16 }, (_, i) => observation(fp(first + i))),
      },
    })
  const decide = (i: number) =>
    call(tls, eg.base, `/api/decisions/ssh1/${fp(i)}`, { method: 'PUT', body: { status: 'blocked' }, token: admin })
  const firstUpload = await upload(0)
  assert.equal(firstUpload.status, 200, JSON.stringify(firstUpload.body))

  disk.fill()
  // The database may still find room for a while (SQLite's write-ahead log, a table's last
  // page): upload until one is refused, four at a time (merged into one group commit).
  const stored = [0]
  const refused: number[] = []
  for (let next = 16; refused.length === 0; ) {
    assert.ok(next < 16 * 2000, 'the full disk refused an upload')
    const firsts = [0, 1, 2, 3].map((k) => next + 16 * k)
    next += 64
    const answers = await Promise.all(firsts.map(upload))
    answers.forEach((r, k) => {
      if (r.status === 200) stored.push(firsts[k]!)
      else {
        refusal(r)
        refused.push(firsts[k]!)
      }
    })
  }
  const decision = await decide(1)
  if (decision.status !== 200) refusal(decision)
  assert.equal(eg.child.process.exitCode, null, `edgegate exited:\n${eg.child.log()}`)

  disk.free()
  for (const first of refused) assert.equal((await upload(first)).status, 200)
  assert.equal((await decide(1)).status, 200)
  const listed = await call(tls, eg.base, '/api/fingerprints?instance_id=ssh1&limit=1000', { token: admin })
  assert.equal(listed.status, 200)
  const expected = [...stored, ...refused].flatMap((first) => Array.from({ length: 16 }, (_, i) => fp(first + i)))
  assert.deepEqual(listed.body.fingerprints.map((f: { fingerprint: string }) => f.fingerprint).sort(), expected.sort())
  assert.doesNotMatch(eg.child.log(), /uncaught|unhandled|no transaction is active/i)
}

test('a full disk under SQLite: refused writes answer 503 and leave nothing; acknowledged ones are stored', async (t) => {
  const disk = mountSmallDisk('edgegate-full-', 8)
  t.after(() => disk.remove())
  await writeOnFullDisk(t, `sqlite:${join(disk.path, 'edgegate.db')}`, disk)
})

test('a full data disk under PostgreSQL (SQLSTATE 53100): the same', async (t) => {
  const disk = mountSmallDisk('edgegate-pg-full-', 16)
  const server = await startPostgres()
  t.after(async () => {
    await server.stop()
    disk.remove()
  })
  await writeOnFullDisk(t, await postgresDatabaseOn(disk, server), disk)
})

test('a disk error under SQLite (ext4 turns read-only): writes answer 503, pulls and reads go on', async (t) => {
  const disk = mountFailingDisk('edgegate-failing-')
  t.after(() => disk.remove())
  const tls = makeTls()
  t.after(() => tls.ca.remove())
  const database = `sqlite:${join(disk.path, 'edgegate.db')}`
  const { tokens, admin } = await seed(database, [{ id: 'ssh1', kind: 'sshgate' }])
  const eg = await startEdgegate(database, tls, ['--web-enforcement-interval', '1s', '--retention-interval', '1s'])
  t.after(() => eg.stop())
  const { upload, decide, pull, stored } = nodeCalls(tls, eg.base, tokens.ssh1!, admin)
  assert.equal((await upload('a')).status, 200)

  disk.fail()
  refusal(await upload('b'))
  refusal(await decide('a'))
  assert.equal((await pull()).status, 200)
  assert.deepEqual(await stored(), ['a'.repeat(32)])
  assert.equal((await call(tls, eg.base, '/readyz')).status, 200)
  // The background passes (every second) fail and log; the process stays up.
  await new Promise((r) => setTimeout(r, 2500))
  assert.equal(eg.child.process.exitCode, null, `edgegate exited:\n${eg.child.log()}`)
  assert.match(eg.child.log(), /disk I\/O error/)
  assert.doesNotMatch(eg.child.log(), /uncaught|unhandled|no transaction is active/i)

  // The operator's commands: those that only read still work, and say why nothing can be changed.
  const env = { EDGEGATE_DATABASE: database }
  const listed = await cli(['node', 'list', '--json'], env)
  assert.equal(listed.code, 0, listed.stderr)
  assert.deepEqual(
    JSON.parse(listed.stdout).map((n: { instance_id: string }) => n.instance_id),
    ['ssh1'],
  )
  const decisions = await cli(['decision', 'list', '--json'], env)
  assert.equal(decisions.code, 0, decisions.stderr)
  const shown = await cli(['status'], env)
  assert.equal(shown.code, 0, shown.stderr)
  assert.match(shown.stdout, /read-only file system/)
  assert.match(shown.stdout, /1 observed/)
  const added = await cli(['node', 'add', '--kind', 'sshgate', 'ssh2'], env)
  assert.equal(added.code, 1)
  assert.match(added.stderr, /cannot be opened: EROFS: read-only file system/)
})

test('a PostgreSQL turned read-only (a standby after a failover): writes answer 503, pulls go on, and writes resume once it is writable again', async (t) => {
  const { tls, server, database, name, tokens, admin } = await postgresOfItsOwn(t)
  const eg = await startEdgegate(database, tls)
  t.after(() => eg.stop())
  const { upload, decide, pull, stored } = nodeCalls(tls, eg.base, tokens.ssh1!, admin)
  assert.equal((await upload('a')).status, 200)

  // New sessions start read-only, as on a hot standby, and the failover ends the current ones.
  await server.query(`alter database ${name} set default_transaction_read_only = on`)
  await server.query(`select pg_terminate_backend(pid) from pg_stat_activity where datname = '${name}'`)
  await waitFor('pulls to be answered again', async () => (await pull()).status === 200)
  refusal(await upload('b'))
  refusal(await decide('a'))
  assert.deepEqual(await stored(), ['a'.repeat(32)])

  // The primary is back. A session opened while it was read-only fails one write and is dropped,
  // not put back in the pool: the nodes' retries get through within the pool's 10 sessions.
  await server.query(`alter database ${name} reset default_transaction_read_only`)
  const retried = async (send: () => ReturnType<typeof call>) => {
    for (let attempt = 0; attempt <= 10; attempt++) {
      const r = await send()
      if (r.status === 200) return
      refusal(r)
    }
    assert.fail('still refused after every pooled session was tried')
  }
  await retried(() => upload('b'))
  await retried(() => decide('a'))
  assert.deepEqual(await stored(), ['a'.repeat(32), 'b'.repeat(32)])
  assert.match(eg.child.log(), /read-only transaction/)
  assert.doesNotMatch(eg.child.log(), /uncaught|unhandled/i)
})

test('restarted on a standby (PostgreSQL read-only): pulls answered, and the background jobs, with nothing due, write and log nothing', async (t) => {
  const { tls, server, database, name, tokens, admin } = await postgresOfItsOwn(t)
  const first = await startEdgegate(database, tls)
  const before = nodeCalls(tls, first.base, tokens.ssh1!, admin)
  assert.equal((await before.upload('a')).status, 200)
  // Something for each job to look at and find not yet due: an aggregate, a decision that expires.
  const expiring = await call(tls, first.base, `/api/decisions/ssh1/${'a'.repeat(32)}`, {
    method: 'PUT',
    body: { status: 'blocked', expires_in: '24h' },
    token: admin,
  })
  assert.equal(expiring.status, 200, JSON.stringify(expiring.body))
  await first.stop()

  await server.query(`alter database ${name} set default_transaction_read_only = on`)
  // Every job at its shortest: each runs at start, the cleanup and the controller every second.
  const eg = await startEdgegate(database, tls, [
    '--retention-interval',
    '1s',
    '--fingerprint-retention',
    '24h',
    '--web-shadow-enabled',
    '--web-enforcement-mode',
    'enforce',
    '--web-enforcement-interval',
    '1s',
  ])
  t.after(() => eg.stop())
  const { upload, pull } = nodeCalls(tls, eg.base, tokens.ssh1!, admin)
  const policy = await pull()
  assert.equal(policy.status, 200, JSON.stringify(policy.body))
  refusal(await upload('b'))
  await new Promise((resolve) => setTimeout(resolve, 3000))
  // Logged at warn and above, apart from the refused upload's request line: before, the cleanup
  // failed every run on an empty delete, and the expiry sweep every ten seconds on a lock
  // PostgreSQL refuses in a read-only transaction.
  const lines = eg.child
    .log()
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as { msg: string; request_id?: string })
  assert.deepEqual(
    lines.filter((line) => line.request_id === undefined).map((line) => line.msg),
    [],
  )
  assert.equal(lines.length, 1, 'the refused upload')
})

/** A PostgreSQL server of the test's own (the test turns it read-only), a database and a gate node `ssh1`. */
async function postgresOfItsOwn(t: TestContext) {
  const tls = makeTls()
  t.after(() => tls.ca.remove())
  const server = await startPostgres()
  t.after(() => server.stop())
  const database = await server.createDatabase()
  const name = new URL(database).pathname.slice(1)
  const { tokens, admin } = await seed(database, [{ id: 'ssh1', kind: 'sshgate' }])
  return { tls, server, database, name, tokens, admin }
}

function refusal(r: Awaited<ReturnType<typeof call>>): void {
  assert.equal(r.status, 503, JSON.stringify(r.body))
  assert.equal(r.body.error.code, 'unavailable')
  assert.equal(r.headers['retry-after'], '5')
}

/** A node's upload and pull, an operator's decision, and the stored fingerprints, by a letter each. */
function nodeCalls(tls: ReturnType<typeof makeTls>, base: string, token: string, admin: string) {
  const fp = (letter: string) => letter.repeat(32)
  return {
    upload: (letter: string) =>
      call(tls, base, '/v1/observations/batch?instance_id=ssh1', {
        method: 'POST',
        token,
        body: { instance_id: 'ssh1', observations: [observation(fp(letter))] },
      }),
    decide: (letter: string) =>
      call(tls, base, `/api/decisions/ssh1/${fp(letter)}`, {
        method: 'PUT',
        body: { status: 'blocked' },
        token: admin,
      }),
    pull: () => call(tls, base, '/v1/policy?instance_id=ssh1', { token }),
    stored: async () => {
      const listed = await call(tls, base, '/api/fingerprints?instance_id=ssh1', { token: admin })
      assert.equal(listed.status, 200)
      return listed.body.fingerprints.map((f: { fingerprint: string }) => f.fingerprint).sort()
    },
  }
}
