/**
 * The realtime stream (GET /api/v1/stream, Server-Sent Events): who receives what, resume
 * with Last-Event-ID with nothing missed, membership changes re-checked, and two processes
 * on one PostgreSQL database delivering the same stream.
 */
import assert from 'node:assert/strict'
import { describe, type TestContext, test } from 'node:test'
import { sql } from '@gatehouse/kit/db/database.ts'
import { waitFor } from '@gatehouse/testkit'
import { pruneStreamChanges, sweepSessions } from '../src/housekeeping.ts'
import { RESUME_LIMIT } from '../src/realtime/hub.ts'
import {
  ADMIN,
  ADMIN_PASSWORD,
  backends,
  channel,
  member,
  type Notify,
  publish,
  reader,
  startNotify,
} from './helpers.ts'
import { SseClient } from './sse.ts'

async function setup(n: Notify) {
  const admin = await n.client.login(ADMIN, ADMIN_PASSWORD)
  const ops = await channel(n, admin, 'ops')
  const secret = await channel(n, admin, 'secret', 'private')
  const viewer = await reader(n, admin, 'vera')
  const operator = await reader(n, admin, 'otto')
  await member(n, admin, 'ops', 'otto', 'operator')
  return { admin, ops, secret, viewer, operator }
}

/** Open a stream and take its `ready` event. */
async function open(n: Notify, cookie: string, lastEventId?: string): Promise<SseClient> {
  const s = await SseClient.open(n.base, cookie, lastEventId)
  assert.equal(s.status, 200)
  assert.equal((await s.next()).event, 'ready')
  return s
}

for (const backend of backends) {
  describe(`realtime stream (${backend.name})`, () => {
    test('new notifications reach the readers who may see their channel, and no one else', async (t) => {
      const n = await startNotify(backend)
      t.after(() => n.close())
      const { admin, ops, secret, viewer } = await setup(n)
      const sa = await open(n, admin)
      const sv = await open(n, viewer)
      t.after(() => {
        sa.close()
        sv.close()
      })
      const hidden = await publish(n, secret.token, 'private disk alert')
      const seen = await publish(n, ops.token, 'public disk alert', 'nagios')
      const a1 = await sa.nextOf('notification')
      assert.equal(a1.data.notification.id, hidden)
      assert.equal((await sa.nextOf('notification')).data.notification.id, seen)
      // Events come in id order: the viewer's first one is the later public item.
      const v1 = await sv.nextOf('notification')
      assert.equal(v1.data.notification.id, seen)
      assert.equal(v1.data.notification.channel, 'ops')
      assert.equal(v1.data.notification.source, 'nagios')
      assert.equal(v1.data.notification.read, false)
      assert.match(v1.id, /^\d+-\d+$/)
    })

    test('a new stream starts at the newest rows, after deliveries no stream was open for', async (t) => {
      const n = await startNotify(backend)
      t.after(() => n.close())
      const { ops, viewer } = await setup(n)
      // With nobody attached the hub reads nothing; the stream that attaches moves it first.
      const before: number[] = []
      for (let i = 0; i < 3; i++) before.push(await publish(n, ops.token, `unwatched ${i}`))
      const s = await SseClient.open(n.base, viewer)
      t.after(() => s.close())
      const ready = await s.next()
      assert.equal(ready.event, 'ready')
      assert.equal(Number(String(ready.data.position).split('-')[0]), before.at(-1))
      const live = await publish(n, ops.token, 'watched')
      const e = await s.next()
      assert.deepEqual([e.event, e.data.notification.id], ['notification', live])
    })

    test('lifecycle goes to the channel readers, read state and archive only to their reader', async (t) => {
      const n = await startNotify(backend)
      t.after(() => n.close())
      const { admin, ops, viewer, operator } = await setup(n)
      const id = await publish(n, ops.token, 'cpu high')
      const sa = await open(n, admin)
      const sv = await open(n, viewer)
      t.after(() => {
        sa.close()
        sv.close()
      })
      assert.equal((await n.client.post(`/api/v1/notifications/${id}/acknowledge`, { cookie: operator })).status, 200)
      for (const s of [sa, sv]) {
        const e = await s.next()
        assert.equal(e.event, 'lifecycle')
        assert.deepEqual(
          { id: e.data.id, state: e.data.state, by: e.data.event.username, action: e.data.event.action },
          { id, state: 'acknowledged', by: 'otto', action: 'acknowledge' },
        )
      }
      // A repeated acknowledge changes nothing and sends nothing.
      await n.client.post(`/api/v1/notifications/${id}/acknowledge`, { cookie: operator })
      assert.equal((await n.client.post(`/api/v1/notifications/${id}/read`, { cookie: viewer })).status, 200)
      assert.equal((await n.client.post('/api/v1/channels/ops/read', { cookie: viewer })).status, 200)
      assert.equal((await n.client.post('/api/v1/notifications/read-all', { cookie: viewer })).status, 200)
      assert.equal((await n.client.post(`/api/v1/notifications/${id}/archive`, { cookie: viewer })).status, 200)
      assert.equal((await n.client.post(`/api/v1/notifications/${id}/restore`, { cookie: viewer })).status, 200)
      const one = await sv.next()
      assert.deepEqual([one.event, one.data.notification_ids], ['read', [id]])
      const ch = await sv.next()
      assert.deepEqual([ch.event, ch.data.channels], ['read', [{ channel: 'ops', last_read_id: id }]])
      const all = await sv.next()
      assert.equal(all.event, 'read')
      assert.ok(all.data.channels.some((c: { channel: string }) => c.channel === 'ops'))
      assert.deepEqual([(await sv.next()).data.archived, (await sv.next()).data.archived], [true, false])
      // The administrator's stream carried none of the viewer's own changes: its next event is its own.
      await n.client.post(`/api/v1/notifications/${id}/archive`, { cookie: admin })
      const mine = await sa.next()
      assert.deepEqual([mine.event, mine.data.id, mine.data.archived], ['archive', id, true])
    })

    test('a dropped stream resumes with Last-Event-ID and misses nothing', async (t) => {
      const n = await startNotify(backend)
      t.after(() => n.close())
      const { ops, viewer, operator } = await setup(n)
      let s = await open(n, viewer)
      const first = await publish(n, ops.token, 'first')
      assert.equal((await s.nextOf('notification')).data.notification.id, first)
      const resumeFrom = s.lastId
      s.close()
      // While disconnected: more notifications, a lifecycle change and a read change.
      const missed: number[] = []
      for (let i = 0; i < 30; i++) missed.push(await publish(n, ops.token, `missed ${i}`))
      await n.client.post(`/api/v1/notifications/${first}/acknowledge`, { cookie: operator })
      await n.client.post(`/api/v1/notifications/${missed[3]}/read`, { cookie: viewer })
      s = await SseClient.open(n.base, viewer, resumeFrom)
      t.after(() => s.close())
      const got: number[] = []
      for (let i = 0; i < missed.length; i++) {
        const e = await s.next()
        assert.equal(e.event, 'notification')
        got.push(e.data.notification.id)
      }
      assert.deepEqual(got, missed)
      assert.deepEqual(
        [(await s.next()).event, (await s.next()).event, (await s.next()).event],
        ['lifecycle', 'read', 'ready'],
      )
      // And it continues live from there, without repeating anything.
      const live = await publish(n, ops.token, 'live again')
      const e = await s.next()
      assert.deepEqual([e.event, e.data.notification.id], ['notification', live])
      // A resume from the newest position sends nothing but ready.
      const again = await SseClient.open(n.base, viewer, e.id)
      t.after(() => again.close())
      const ready = await again.next()
      assert.deepEqual([ready.event, ready.data.position], ['ready', e.id])
    })

    test('a resume too far behind gets reset, then ready, then live events', async (t) => {
      const n = await startNotify(backend)
      t.after(() => n.close())
      const { admin, ops, viewer } = await setup(n)
      // An open stream keeps the hub reading what is committed.
      const watcher = await open(n, admin)
      t.after(() => watcher.close())
      const s = await open(n, viewer)
      const resumeFrom = s.lastId
      s.close()
      // More changes than a resume replays (another reader's read state: the viewer would get none).
      const otto = await n.database.db
        .selectFrom('users')
        .select('id')
        .where('username', '=', 'otto')
        .executeTakeFirstOrThrow()
      const now = new Date().toISOString()
      await n.database.db
        .insertInto('stream_changes')
        .values(
          Array.from({ length: RESUME_LIMIT + 1 }, () => ({
            kind: 'read' as const,
            channel: 'ops',
            user_id: otto.id,
            data: '{}',
            created_at: now,
          })),
        )
        .execute()
      // The watcher receiving this means the hub has read past the inserted changes too.
      const after = await publish(n, ops.token, 'after the gap')
      assert.equal((await watcher.nextOf('notification')).data.notification.id, after)
      const r = await SseClient.open(n.base, viewer, resumeFrom)
      t.after(() => r.close())
      const reset = await r.next()
      const ready = await r.next()
      assert.deepEqual([reset.event, ready.event], ['reset', 'ready'])
      assert.equal(reset.data.position, ready.data.position)
      assert.equal(Number(ready.data.position.split('-')[0]), after)
      const live = await publish(n, ops.token, 'live after reset')
      const e = await r.next()
      assert.deepEqual([e.event, e.data.notification.id], ['notification', live])
    })

    test('retention prunes the change log: a resume from before the oldest kept change gets reset', async (t) => {
      const n = await startNotify(backend)
      t.after(() => n.close())
      const { ops, viewer, operator } = await setup(n)
      const id = await publish(n, ops.token, 'disk full')
      const s = await open(n, viewer)
      const beforeBoth = s.lastId
      assert.equal((await n.client.post(`/api/v1/notifications/${id}/acknowledge`, { cookie: operator })).status, 200)
      const afterAck = (await s.nextOf('lifecycle')).id
      assert.equal((await n.client.post(`/api/v1/notifications/${id}/resolve`, { cookie: operator })).status, 200)
      assert.equal((await s.nextOf('lifecycle')).data.state, 'resolved')
      s.close()
      const total = Number(
        (
          await n.database.db
            .selectFrom('stream_changes')
            .select((eb) => eb.fn.countAll().as('c'))
            .executeTakeFirstOrThrow()
        ).c,
      )
      // Recent changes stay; a cutoff past them all removes every one but the newest (the resolve).
      assert.equal(await pruneStreamChanges(n.database.db, Date.now() - 3_600_000), 0)
      assert.equal(await pruneStreamChanges(n.database.db, Date.now() + 60_000), total - 1)
      assert.equal(await pruneStreamChanges(n.database.db, Date.now() + 60_000), 0)
      // From before the acknowledgement (pruned): the kept resolve, then reset.
      const early = await SseClient.open(n.base, viewer, beforeBoth)
      t.after(() => early.close())
      const events = [await early.next(), await early.next(), await early.next()]
      assert.deepEqual(
        events.map((e) => e.event),
        ['lifecycle', 'reset', 'ready'],
      )
      assert.equal(events[0]!.data.state, 'resolved')
      // From after it: nothing it needs was pruned, so a plain replay.
      const late = await SseClient.open(n.base, viewer, afterAck)
      t.after(() => late.close())
      assert.deepEqual([(await late.next()).event, (await late.next()).event], ['lifecycle', 'ready'])
    })

    test('housekeeping removes expired sessions and keeps live ones', async (t) => {
      const n = await startNotify(backend)
      t.after(() => n.close())
      const { viewer } = await setup(n)
      const vera = await n.database.db
        .selectFrom('users')
        .select('id')
        .where('username', '=', 'vera')
        .executeTakeFirstOrThrow()
      const past = new Date(Date.now() - 60_000).toISOString()
      await n.database.db
        .insertInto('sessions')
        .values({ token_hash: 'expired-session-hash', user_id: vera.id, created_at: past, expires_at: past })
        .execute()
      assert.equal(await sweepSessions(n.database.db, Date.now()), 1)
      assert.equal(await sweepSessions(n.database.db, Date.now()), 0)
      assert.equal((await n.client.get('/api/v1/notifications', { cookie: viewer })).status, 200)
    })

    test('membership changes are re-checked: a private channel appears and disappears', async (t) => {
      const n = await startNotify(backend)
      t.after(() => n.close())
      const { admin, ops, viewer } = await setup(n)
      const s = await open(n, viewer)
      t.after(() => s.close())
      const priv = await channel(n, admin, 'war-room', 'private')
      await member(n, admin, 'war-room', 'vera', 'viewer')
      const joined = await s.nextOf('membership')
      assert.equal(joined.event, 'membership')
      assert.deepEqual(
        [joined.data.change, joined.data.channel.name, joined.data.role],
        ['member', 'war-room', 'viewer'],
      )
      const inside = await publish(n, priv.token, 'inside the war room')
      assert.equal((await s.nextOf('notification')).data.notification.id, inside)
      assert.equal((await n.client.delete('/api/v1/channels/war-room/members/vera', { cookie: admin })).status, 204)
      const left = await s.next()
      assert.deepEqual([left.event, left.data.change, left.data.role], ['membership', 'removed', null])
      await publish(n, priv.token, 'no longer visible')
      const after = await publish(n, ops.token, 'public again')
      const next = await s.nextOf('notification')
      assert.equal(next.data.notification.id, after)
    })

    test('no credentials: 401; a malformed Last-Event-ID: 400 before the stream starts', async (t) => {
      const n = await startNotify(backend)
      t.after(() => n.close())
      const { viewer } = await setup(n)
      const anon = await fetch(`${n.base}/api/v1/stream`)
      assert.equal(anon.status, 401)
      for (const bad of ['abc', '1-', '-1-2', '1-2-3', `${'9'.repeat(16)}-1`]) {
        const res = await n.client.get('/api/v1/stream', { cookie: viewer, headers: { 'last-event-id': bad } })
        assert.equal(res.status, 400, bad)
        assert.equal(res.body.error.code, 'invalid_stream_position')
      }
      const q = await n.client.get('/api/v1/stream?after=x', { cookie: viewer })
      assert.equal(q.body.error.code, 'invalid_stream_position')
    })
  })
}

/**
 * Two processes on one PostgreSQL database, a's readers and channels, and vera's stream on b.
 * Both poll once an hour: only LISTEN/NOTIFY can deliver across them in a test's time.
 */
async function twoProcesses(t: TestContext) {
  const url = await backends[1]!.url()
  const same = { name: 'postgres' as const, url: async () => url }
  const a = await startNotify(same, { streamPollMs: 3_600_000 })
  t.after(() => a.close())
  const b = await startNotify(same, { streamPollMs: 3_600_000 })
  t.after(() => b.close())
  const readers = await setup(a)
  const sb = await open(b, await b.client.login('vera', 'vera-password-123'))
  t.after(() => sb.close())
  return { a, b, sb, ...readers }
}

describe('realtime stream across two processes (postgres)', () => {
  test('both processes deliver the same stream, by LISTEN/NOTIFY, and a stream resumes on the other one', async (t) => {
    const { a, b, sb, ops, viewer, operator } = await twoProcesses(t)
    const id = await publish(a, ops.token, 'stored by process a')
    const e = await sb.nextOf('notification')
    assert.equal(e.data.notification.id, id)
    await a.client.post(`/api/v1/notifications/${id}/acknowledge`, { cookie: operator })
    assert.equal((await sb.next()).event, 'lifecycle')
    const from = sb.lastId
    sb.close()
    const missed = [await publish(b, ops.token, 'via b'), await publish(a, ops.token, 'via a')]
    const sa = await SseClient.open(a.base, viewer, from)
    t.after(() => sa.close())
    assert.deepEqual([(await sa.next()).data.notification.id, (await sa.next()).data.notification.id], missed)
    assert.equal((await sa.next()).event, 'ready')
  })

  test('a LISTEN connection the server drops is opened again, and delivery by NOTIFY resumes', async (t) => {
    const { a, sb, b, ops, viewer } = await twoProcesses(t)
    // The two processes' LISTEN sessions, as PostgreSQL sees them.
    const listeners = async () =>
      (
        await sql<{ pid: number }>`select pid from pg_stat_activity
          where datname = current_database() and query like '%LISTEN notify_stream%' and pid <> pg_backend_pid()
          order by pid`.execute(a.database.db)
      ).rows.map((r) => r.pid)
    const dropped = await waitFor('both LISTEN sessions', async () => {
      const now = await listeners()
      return now.length === 2 ? now : undefined
    })
    // The last statement of a LISTEN session is the LISTEN or its heartbeat.
    await sql`select pg_terminate_backend(pid) from pg_stat_activity
      where datname = current_database() and query like '%LISTEN notify_stream%' and pid <> pg_backend_pid()`.execute(
      a.database.db,
    )

    // Committed while b has no LISTEN session (it waits a second to reconnect): the pass that
    // follows its reconnection delivers it.
    const whileDown = await publish(a, ops.token, 'stored while b was not listening')
    assert.equal((await sb.nextOf('notification')).data.notification.id, whileDown)
    const back = await waitFor('two new LISTEN sessions', async () => {
      const now = await listeners()
      return now.length === 2 && now.every((pid) => !dropped.includes(pid)) ? now : undefined
    })
    assert.equal(back.length, 2)
    // With an hour's poll, only NOTIFY on the new session can deliver this one.
    const after = await publish(a, ops.token, 'stored after b listened again')
    assert.equal((await sb.nextOf('notification')).data.notification.id, after)
    // a's own stream is unaffected throughout.
    const sa = await open(a, viewer)
    t.after(() => sa.close())
    const last = await publish(b, ops.token, 'stored by b')
    assert.equal((await sa.nextOf('notification')).data.notification.id, last)
  })
})
