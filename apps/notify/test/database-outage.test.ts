/**
 * The database going away under a running server. A PostgreSQL restart: while it is down,
 * deliveries and pages answer 503 with Retry-After and readiness fails, and the process stays
 * up; nothing stored is lost; once it is back, deliveries are stored again on the first try,
 * an open stream goes on, and the LISTEN session returns by itself. A SQLite file another
 * process holds the write lock on: a delivery answers 503 after the busy timeout, and the
 * server goes on answering everything else meanwhile. A full disk, under SQLite and under
 * PostgreSQL's data: no delivery is acknowledged without being stored. A disk error under SQLite
 * (the file system turns read-only), or a PostgreSQL turned read-only (a standby after a
 * failover): deliveries answer 503, and reading goes on.
 */
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { PassThrough } from 'node:stream'
import { type TestContext, test } from 'node:test'
import { createLogger, hashToken } from '@gatehouse/kit'
import { sql } from '@gatehouse/kit/db/database.ts'
import {
  mountFailingDisk,
  mountSmallDisk,
  postgresDatabaseOn,
  type SmallDisk,
  startPostgres,
  waitFor,
} from '@gatehouse/testkit'
import { cli } from './cli-run.ts'
import { ADMIN, ADMIN_PASSWORD, backends, channel, count, publish, reader, startNotify } from './helpers.ts'
import { SseClient } from './sse.ts'

/**
 * The admin's channel `ops` with one notification stored (`text`), and a reader `vera` whose
 * stream is open and past its `ready` event (closed after the test).
 */
async function opsAndReader(t: TestContext, n: Awaited<ReturnType<typeof startNotify>>, text: string) {
  const admin = await n.client.login(ADMIN, ADMIN_PASSWORD)
  const ops = await channel(n, admin, 'ops')
  const viewer = await reader(n, admin, 'vera')
  const before = await publish(n, ops.token, text)
  const stream = await SseClient.open(n.base, viewer)
  t.after(() => stream.close())
  assert.equal((await stream.next()).event, 'ready')
  return { ops, viewer, before, stream }
}

test('a PostgreSQL restart: 503 while it is down, then deliveries, streams and LISTEN resume', async (t) => {
  // A server of its own: halting the file's shared one would cut other tests' databases.
  const server = await startPostgres()
  t.after(() => server.stop())
  const url = await server.createDatabase()
  const n = await startNotify({ name: 'postgres', url: async () => url }, { streamPollMs: 3_600_000 })
  t.after(() => n.close())
  const { ops, viewer, before, stream } = await opsAndReader(t, n, 'stored before the restart')
  const listening = async () =>
    (
      await server.query(
        "select count(*)::int as n from pg_stat_activity where query like '%LISTEN notify_stream%' and pid <> pg_backend_pid()",
        new URL(url).pathname.slice(1),
      )
    ).rows[0].n as number
  assert.equal(await listening(), 1)

  await server.halt()
  const refused = await n.client.post('/api/v1/messages', { token: ops.token, body: { text: 'while it is down' } })
  assert.equal(refused.status, 503, refused.text)
  assert.deepEqual(refused.body.error, { code: 'unavailable', message: 'the database is unavailable' })
  assert.equal(refused.headers.get('retry-after'), '5')
  const page = await n.client.get('/api/v1/notifications', { cookie: viewer })
  assert.equal(page.status, 503, page.text)
  assert.equal((await n.client.get('/readyz')).status, 503)

  await server.resume()
  assert.equal((await n.client.get('/readyz')).status, 200)
  const afterId = await publish(n, ops.token, 'stored after the restart')
  assert.equal((await stream.nextOf('notification')).data.notification.id, afterId)
  // The LISTEN connection failed to reopen while the server was down and kept trying.
  await waitFor('the LISTEN session to return', async () => (await listening()) === 1)
  const stored = await sql<{ title: string }>`select title from notifications order by id`.execute(n.database.db)
  assert.deepEqual(
    stored.rows.map((r) => r.title),
    ['stored before the restart', 'stored after the restart'],
  )
  assert.equal(await count(n), 2)
  assert.ok(afterId > before)
})

test('a SQLite file another process holds the write lock on: 503 for the delivery, every read answered meanwhile', async (t) => {
  const url = await backends[0]!.url()
  const n = await startNotify({ name: 'sqlite', url: async () => url })
  t.after(() => n.close())
  const { ops, viewer, stream } = await opsAndReader(t, n, 'stored before the lock')

  // An admin's sqlite3 shell, a backup tool: another connection holding the write lock.
  const holder = new DatabaseSync(url.slice('sqlite:'.length))
  t.after(() => holder.close())
  holder.exec('begin immediate')
  let settled = false
  const delivery = n.client.post('/api/v1/messages', { token: ops.token, body: { text: 'while locked' } })
  void delivery.finally(() => {
    settled = true
  })
  // While the delivery waits out the busy timeout (5 s), the server answers everything else.
  const page = await n.client.get('/api/v1/notifications', { cookie: viewer })
  assert.equal(page.status, 200, page.text)
  assert.equal((await n.client.get('/readyz')).status, 200)
  assert.equal((await n.client.get('/healthz')).status, 200)
  assert.equal(settled, false, 'answered while the delivery still waits')
  const refused = await delivery
  assert.equal(refused.status, 503, refused.text)
  assert.deepEqual(refused.body.error, { code: 'unavailable', message: 'the database is unavailable' })
  assert.equal(refused.headers.get('retry-after'), '5')

  holder.exec('rollback')
  const afterId = await publish(n, ops.token, 'stored after the lock')
  assert.equal((await stream.nextOf('notification')).data.notification.id, afterId)
  assert.equal(await count(n), 2)
})

/**
 * Fill `disk` under a running notify: every delivery acknowledged meanwhile is stored, the rest
 * answer 503, and deliveries are stored again once space is freed.
 */
async function deliverOnFullDisk(n: Awaited<ReturnType<typeof startNotify>>, disk: SmallDisk): Promise<void> {
  const admin = await n.client.login(ADMIN, ADMIN_PASSWORD)
  const ops = await channel(n, admin, 'ops')
  const first = await publish(n, ops.token, 'stored before the disk filled')

  disk.fill()
  let sent = 0
  const deliver = () =>
    n.client.post('/api/v1/messages', { token: ops.token, body: { text: `while full ${sent++} ${'x'.repeat(2000)}` } })
  const acknowledged: number[] = []
  let refused = 0
  // The database may still find room for a while (SQLite's write-ahead log, a table's last
  // page): deliver until one is refused. Alone (an autocommitted INSERT … RETURNING) and grouped
  // (one transaction for several).
  for (let round = 0; refused === 0; round++) {
    assert.ok(round < 100, 'the full disk refused a delivery')
    for (const answer of [await deliver(), await deliver(), ...(await Promise.all([1, 2, 3, 4, 5].map(deliver)))]) {
      if (answer.status === 201) {
        acknowledged.push(answer.body.notification.id)
        continue
      }
      refused++
      assert.equal(answer.status, 503, answer.text)
      assert.deepEqual(answer.body.error, { code: 'unavailable', message: 'the database is unavailable' })
      assert.equal(answer.headers.get('retry-after'), '5')
    }
  }
  const stored = await sql<{ id: number }>`select id from notifications order by id`.execute(n.database.db)
  assert.deepEqual(
    stored.rows.map((r) => Number(r.id)),
    [first, ...acknowledged.sort((a, b) => a - b)],
  )

  disk.free()
  const after = await publish(n, ops.token, 'stored after space was freed')
  assert.equal(await count(n), 2 + acknowledged.length)
  assert.ok(after > first)
}

/** notify on a SQLite file on `disk`; after the test it is closed, then the disk removed. */
async function startOnDisk(t: TestContext, disk: { path: string; remove(): void }) {
  let n: Awaited<ReturnType<typeof startNotify>> | undefined
  t.after(async () => {
    await n?.close()
    disk.remove()
  })
  const url = `sqlite:${join(disk.path, 'notify.db')}`
  n = await startNotify({ name: 'sqlite', url: async () => url })
  return n
}

test('a full disk under SQLite: every acknowledged delivery is stored, the rest answer 503; stored again once space is freed', async (t) => {
  const disk = mountSmallDisk('notify-full-', 4)
  await deliverOnFullDisk(await startOnDisk(t, disk), disk)
})

test('a full data disk under PostgreSQL (SQLSTATE 53100): the same, and the server stays up', async (t) => {
  const disk = mountSmallDisk('notify-pg-full-', 16)
  const server = await startPostgres()
  let n: Awaited<ReturnType<typeof startNotify>> | undefined
  t.after(async () => {
    await n?.close()
    await server.stop()
    disk.remove()
  })
  // The database's tables on the small disk, the write-ahead log on the server's own (a full WAL
  // disk stops PostgreSQL altogether: a restart, tested above).
  const url = await postgresDatabaseOn(disk, server)
  n = await startNotify({ name: 'postgres', url: async () => url })
  await deliverOnFullDisk(n, disk)
  assert.equal((await server.query('select 1 as one')).rows[0].one, 1)
})

test('a disk error under SQLite (ext4 turns read-only): deliveries answer 503; pages, search and streams go on', async (t) => {
  const disk = mountFailingDisk('notify-failing-')
  const n = await startOnDisk(t, disk)
  const { ops, viewer, before } = await opsAndReader(t, n, 'stored before the disk failed')

  disk.fail()
  const refused = await n.client.post('/api/v1/messages', { token: ops.token, body: { text: 'after the failure' } })
  assert.equal(refused.status, 503, refused.text)
  assert.deepEqual(refused.body.error, { code: 'unavailable', message: 'the database is unavailable' })
  assert.equal(refused.headers.get('retry-after'), '5')
  const page = await n.client.get('/api/v1/notifications', { cookie: viewer })
  assert.equal(page.status, 200, page.text)
  assert.deepEqual(
    page.body.notifications.map((m: { id: number }) => m.id),
    [before],
  )
  const found = await n.client.get('/api/v1/notifications?q=stored', { cookie: viewer })
  assert.equal(found.status, 200, found.text)
  assert.equal(found.body.notifications.length, 1)
  assert.equal((await n.client.get('/readyz')).status, 200)
  const later = await SseClient.open(n.base, viewer)
  t.after(() => later.close())
  assert.equal((await later.next()).event, 'ready')
  assert.equal(await count(n), 1)

  // The operator's commands: lists still work; a change is refused with the reason.
  const db = ['--database', `sqlite:${join(disk.path, 'notify.db')}`]
  const users = await cli(['user', 'list', '--json', ...db])
  assert.equal(users.code, 0, users.stderr)
  assert.ok(
    JSON.parse(users.stdout).some((u: { username: string }) => u.username === 'vera'),
    users.stdout,
  )
  const created = await cli(['user', 'create', 'ci-bot', '--system', ...db])
  assert.equal(created.code, 1)
  assert.match(created.stderr, /cannot be opened: EROFS: read-only file system/)
})

test('a PostgreSQL turned read-only (a standby after a failover): deliveries answer 503, pages and streams go on, then deliveries resume', async (t) => {
  const server = await startPostgres()
  t.after(() => server.stop())
  const url = await server.createDatabase()
  const name = new URL(url).pathname.slice(1)
  // A long sign-in window: no count is due for removal when the cleanup runs below.
  const n = await startNotify(
    { name: 'postgres', url: async () => url },
    { env: { NOTIFY_LOGIN_THROTTLE_WINDOW: '1h' } },
  )
  t.after(() => n.close())
  const { ops, viewer, before, stream } = await opsAndReader(t, n, 'stored before the failover')
  const deliver = (text: string) => n.client.post('/api/v1/messages', { token: ops.token, body: { text } })

  // The viewer's session is due for renewal (auth/sessions.ts): the write it tries fails.
  const viewerHash = hashToken(viewer.slice(viewer.indexOf('=') + 1))
  const dueEnd = new Date(Date.now() + 3_600_000).toISOString()
  await n.database.db.updateTable('sessions').set({ expires_at: dueEnd }).where('token_hash', '=', viewerHash).execute()
  // New sessions start read-only, as on a hot standby, and the failover ends the current ones
  // (the LISTEN session's too).
  await server.query(`alter database ${name} set default_transaction_read_only = on`)
  await server.query(`select pg_terminate_backend(pid) from pg_stat_activity where datname = '${name}'`)
  await waitFor('pages answered again', async () => {
    const page = await n.client.get('/api/v1/notifications', { cookie: viewer })
    return page.status === 200 && page.body.notifications.length === 1
  })
  const refused = await deliver('while read-only')
  assert.equal(refused.status, 503, refused.text)
  assert.deepEqual(refused.body.error, { code: 'unavailable', message: 'the database is unavailable' })
  assert.equal(refused.headers.get('retry-after'), '5')
  assert.equal((await n.client.get('/readyz')).status, 200)
  for (let i = 0; i < 3; i++) {
    const page = await n.client.get('/api/v1/notifications', { cookie: viewer })
    assert.equal(page.status, 200, 'a renewal that cannot be written refuses nothing')
  }
  const kept = await n.database.db
    .selectFrom('sessions')
    .select('expires_at')
    .where('token_hash', '=', viewerHash)
    .executeTakeFirstOrThrow()
  assert.equal(kept.expires_at, dueEnd)
  // A sign-in cannot be counted, so the password is not checked: right and wrong both get 503.
  for (const password of ['vera-password-123', 'wrong-password-000']) {
    const login = await n.client.post('/api/v1/auth/login', { body: { username: 'vera', password } })
    assert.equal(login.status, 503, login.text)
  }
  // Writable again: a session opened while read-only fails one write and is dropped, so the
  // sender's retries get through within the pool's sessions; the stream shows the delivery.
  await server.query(`alter database ${name} reset default_transaction_read_only`)
  let afterId: number | undefined
  for (let attempt = 0; attempt <= 10 && afterId === undefined; attempt++) {
    const r = await deliver('after the failover')
    if (r.status === 201) afterId = r.body.notification.id
    else assert.equal(r.status, 503, r.text)
  }
  assert.ok(afterId !== undefined && afterId > before, 'stored once writable')
  assert.equal((await stream.nextOf('notification')).data.notification.id, afterId)
  assert.equal(await count(n), 2)
})

test('restarted on a standby (PostgreSQL read-only): it starts, pages answer, and the hourly cleanup, with nothing due, writes and logs nothing', async (t) => {
  const server = await startPostgres()
  t.after(() => server.stop())
  const url = await server.createDatabase()
  const name = new URL(url).pathname.slice(1)
  const backend = { name: 'postgres' as const, url: async () => url }
  // A long sign-in window: the counts of the sign-ins below are not due when the cleanup runs.
  const env = { NOTIFY_LOGIN_THROTTLE_WINDOW: '1h' }
  const first = await startNotify(backend, { env })
  const { viewer, before } = await opsAndReader(t, first, 'stored before the failover')
  // Push delivery has moved past it (no subscriber): nothing left for the standby to write.
  await waitFor('the push cursor past the notification', async () => {
    const cursor = await first.database.db.selectFrom('push_cursor').select('high_water').executeTakeFirst()
    return Number(cursor?.high_water) >= before
  })
  await first.close()

  await server.query(`alter database ${name} set default_transaction_read_only = on`)
  const logged: string[] = []
  const sink = new PassThrough().on('data', (line: Buffer) => logged.push(line.toString()))
  // Before, the start itself failed: the bootstrap administrator was written at every start.
  const n = await startNotify(backend, {
    env,
    housekeepingIntervalMs: 200,
    logger: createLogger({ name: 'notify', level: 'warn', destination: sink }),
  })
  t.after(() => n.close())
  const page = await n.client.get('/api/v1/notifications', { cookie: viewer })
  assert.equal(page.status, 200, page.text)
  assert.equal(page.body.notifications.length, 1)
  // Several cleanup runs (every 200 ms here): before, each failed on a delete of no row.
  await new Promise((resolve) => setTimeout(resolve, 1500))
  const described = logged.map((line) => {
    const entry = JSON.parse(line) as { msg: string; err?: { message?: string; stack?: string } }
    const where = entry.err?.stack?.match(/apps\/notify\/src\/[\w/.-]+:\d+/)?.[0]
    return `${entry.msg}: ${entry.err?.message} (${where})`
  })
  assert.deepEqual(described, [])
})
