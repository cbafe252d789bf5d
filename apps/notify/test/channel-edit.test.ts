/**
 * Channel editing (PATCH /api/v1/channels/{id}) and the navigation's unread counts
 * (GET /api/v1/unread), on SQLite and PostgreSQL: who may change what, the immutable URL
 * name, clear errors that change nothing, the stream's `channel` event, and counts that
 * follow the cursor, single read marks, archives and channel visibility.
 */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { UNREAD_CAP } from '../src/inbox/unread.ts'
import {
  ADMIN,
  ADMIN_PASSWORD,
  backends,
  channel,
  type Json,
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
  const chanAdmin = await reader(n, admin, 'carl')
  await member(n, admin, 'ops', 'carl', 'channel_admin')
  await member(n, admin, 'ops', 'vera', 'viewer')
  return { admin, ops, secret, viewer, chanAdmin }
}

function counts(body: Json): Record<string, number> {
  return Object.fromEntries(body.channels.map((c: Json) => [c.channel, c.unread]))
}

for (const backend of backends) {
  describe(`channel editing and unread counts (${backend.name})`, () => {
    test('administrators edit everything, channel admins all but visibility, others nothing', async (t) => {
      const n = await startNotify(backend)
      t.after(() => n.close())
      const { admin, viewer, chanAdmin } = await setup(n)
      const patch = (cookie: string, body: unknown, ch = 'ops') =>
        n.client.req('PATCH', `/api/v1/channels/${ch}`, { cookie, body })

      const stream = await SseClient.open(n.base, viewer)
      t.after(() => stream.close())
      assert.equal((await stream.next()).event, 'ready')

      const edited = await patch(chanAdmin, {
        display_name: 'Operations',
        description: 'pager',
        accent_color: '#AA0000',
      })
      assert.equal(edited.status, 200, edited.text)
      assert.equal(edited.body.channel.name, 'ops')
      assert.equal(edited.body.channel.display_name, 'Operations')
      assert.equal(edited.body.channel.accent_color, '#aa0000')
      assert.equal(edited.body.channel.role, 'channel_admin')
      const ev = await stream.nextOf('channel')
      assert.equal(ev.data.change, 'updated')
      assert.equal(ev.data.channel.display_name, 'Operations')

      const denied = await patch(chanAdmin, { visibility: 'private' })
      assert.equal(denied.status, 403)
      assert.equal(denied.body.error.code, 'admin_required')
      const viewerTry = await patch(viewer, { display_name: 'mine' })
      assert.equal(viewerTry.status, 403)
      assert.equal((await n.client.req('PATCH', '/api/v1/channels/ops', { body: { description: 'x' } })).status, 401)
      // The URL name is immutable; an empty edit and bad values are clear 400s; nothing changed.
      for (const body of [{ name: 'renamed' }, {}, { accent_color: 'red' }, { visibility: 'secret' }]) {
        const res = await patch(admin, body)
        assert.equal(res.status, 400, JSON.stringify(body))
        assert.equal(res.body.error.code, 'invalid_request')
      }
      // A private channel is hidden from a non-member: 404, like a missing one.
      const hidden = await patch(viewer, { description: 'x' }, 'secret')
      assert.equal(hidden.status, 404)
      const now = await n.client.get('/api/v1/channels/ops', { cookie: admin })
      assert.equal(now.body.channel.display_name, 'Operations')
      assert.equal(now.body.channel.visibility, 'public')

      // Visibility: administrators only; the change reaches every stream without details.
      const priv = await patch(admin, { visibility: 'private' }, 'secret')
      assert.equal(priv.status, 200)
      const made = await patch(admin, { visibility: 'public' }, 'secret')
      assert.equal(made.body.channel.visibility, 'public')
      const vis = await stream.nextOf('channel')
      assert.deepEqual(vis.data, { change: 'updated' })
      const list = await n.client.get('/api/v1/channels', { cookie: viewer })
      assert.ok(
        list.body.channels.some((c: Json) => c.name === 'secret'),
        'now public: the viewer sees it',
      )
    })

    test('unread counts follow cursors, read marks, archives and visibility, capped per channel', async (t) => {
      const n = await startNotify(backend)
      t.after(() => n.close())
      const { admin, ops, secret, viewer } = await setup(n)
      assert.equal((await n.client.get('/api/v1/unread')).status, 401)
      const ids: number[] = []
      for (let i = 0; i < 5; i++) ids.push(await publish(n, ops.token, `ops ${i}`))
      await publish(n, secret.token, 'hidden from vera')
      let res = await n.client.get('/api/v1/unread', { cookie: viewer })
      assert.equal(res.status, 200)
      assert.deepEqual(counts(res.body), { general: 0, ops: 5 }, 'the private channel is not listed')
      assert.equal(res.body.total, 5)
      assert.deepEqual(counts((await n.client.get('/api/v1/unread', { cookie: admin })).body), {
        general: 0,
        ops: 5,
        secret: 1,
      })
      await n.client.post(`/api/v1/notifications/${ids[4]}/read`, { cookie: viewer })
      await n.client.post(`/api/v1/notifications/${ids[3]}/archive`, { cookie: viewer })
      res = await n.client.get('/api/v1/unread', { cookie: viewer })
      assert.equal(counts(res.body).ops, 3)
      await n.client.post('/api/v1/channels/ops/read', { cookie: viewer })
      res = await n.client.get('/api/v1/unread', { cookie: viewer })
      assert.equal(counts(res.body).ops, 0)
      for (let i = 0; i < UNREAD_CAP + 3; i++) await publish(n, ops.token, `flood ${i}`)
      res = await n.client.get('/api/v1/unread', { cookie: viewer })
      const row = res.body.channels.find((c: Json) => c.channel === 'ops')
      assert.deepEqual(row, { channel: 'ops', unread: UNREAD_CAP, more: true })
      assert.equal(res.body.more, true)
      // Unaffected for another reader: counts are per reader.
      assert.equal(counts((await n.client.get('/api/v1/unread', { cookie: admin })).body).ops, UNREAD_CAP)
    })
  })
}
