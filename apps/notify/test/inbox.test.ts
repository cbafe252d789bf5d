import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import {
  ADMIN,
  ADMIN_PASSWORD,
  backends,
  channel,
  DEV_TOKEN,
  member,
  type Notify,
  publish,
  reader,
  startNotify,
} from './helpers.ts'

const ids = (res: { body: { notifications: Array<{ id: number }> } }) => res.body.notifications.map((x) => x.id)

for (const backend of backends) {
  describe(`inbox (${backend.name})`, () => {
    let n: Notify
    let admin: string
    let viewer: string
    let operator: string
    let tokens: Record<string, string>
    before(async () => {
      n = await startNotify(backend)
      admin = await n.client.login(ADMIN, ADMIN_PASSWORD)
      tokens = {
        search: (await channel(n, admin, 'search-room')).token,
        pages: (await channel(n, admin, 'pages')).token,
        reads: (await channel(n, admin, 'reads')).token,
        reads2: (await channel(n, admin, 'reads-two')).token,
        life: (await channel(n, admin, 'life')).token,
        hidden: (await channel(n, admin, 'hidden-ops', 'private')).token,
      }
      viewer = await reader(n, admin, 'vera')
      operator = await reader(n, admin, 'otto')
      await member(n, admin, 'life', 'vera', 'viewer')
      await member(n, admin, 'life', 'otto', 'operator')
    })
    after(() => n.close())

    const list = (query: string, cookie = admin) => n.client.get(`/api/v1/notifications?${query}`, { cookie })

    test('search: case-insensitive substrings over text, attachments, cards, sources and channel names', async () => {
      const t = tokens.search!
      const a = await publish(n, t, 'Disk FULL on Web-01 (100% used)', 'Nagios')
      const b = (
        await n.client.post(`/hooks/${t}`, {
          body: { text: 'build', attachments: [{ title: 'Ünïcode Straße', text: 'price_list [x]*?' }] },
        })
      ).status
      assert.equal(b, 200)
      const bId = ids(await list('channel=search-room&limit=1'))[0]!
      const card = await n.client.post('/api/v1/notifications', {
        token: t,
        body: { version: 1, title: 'Certificate expiry', rows: [{ primary: 'api.example', tags: ['TLS-Ops'] }] },
      })
      const c = card.body.notification.id as number
      const q = async (text: string) => ids(await list(`channel=search-room&q=${encodeURIComponent(text)}`))
      assert.deepEqual(await q('disk full'), [a])
      assert.deepEqual(await q('EB-0'), [a])
      assert.deepEqual(await q('"full on web"'), [a])
      assert.deepEqual(await q('100%'), [a])
      assert.deepEqual(await q('nagios'), [a])
      assert.deepEqual(await q('STRASSE'), [])
      assert.deepEqual(await q('straße'), [bId])
      assert.deepEqual(await q('ÜNÏCODE'), [bId])
      assert.deepEqual(await q('price_list'), [bId])
      assert.deepEqual(await q('[x]*?'), [bId])
      assert.deepEqual(await q('tls-ops'), [c])
      assert.deepEqual(await q('search-room'), [c, bId, a])
      assert.deepEqual(await q('ce'), [c, bId])
      assert.deepEqual(await q('zzz-no-match'), [])
      assert.deepEqual(await q('disk tls'), [])
    })

    test('filters combine; limit is bounded; bad parameters are 400', async () => {
      const t = tokens.search!
      await n.client.post('/api/v1/notifications', {
        token: t,
        body: { version: 1, title: 'warn one', severity: 'warning' },
      })
      const warn = ids(await list('channel=search-room&severity=warning'))
      assert.equal(warn.length, 1)
      assert.deepEqual(ids(await list('channel=search-room&severity=warning&q=one')), warn)
      assert.deepEqual(ids(await list('channel=search-room&severity=critical&q=one')), [])
      assert.deepEqual(ids(await list('channel=search-room&severity=warning&state=resolved')), [])
      for (const query of [
        'limit=201',
        'limit=0',
        'state=open',
        'severity=x',
        'before=abc',
        'before=bjE6MA',
        'foo=1',
      ]) {
        const res = await list(query)
        assert.equal(res.status, 400, query)
      }
      assert.equal((await list('channel=no-such')).status, 404)
    })

    test('pagination is stable while new notifications arrive', async () => {
      const t = tokens.pages!
      const published: number[] = []
      for (let i = 0; i < 25; i++) published.push(await publish(n, t, `page item ${i}`))
      const seen: number[] = []
      let cursor: string | null = null
      let pages = 0
      do {
        const res = await list(`channel=pages&limit=7${cursor ? `&before=${cursor}` : ''}`)
        assert.equal(res.status, 200)
        seen.push(...ids(res))
        cursor = res.body.next_cursor
        // New items arrive between page loads; they must not shift later pages.
        await publish(n, t, `late item ${pages++}`)
      } while (cursor)
      assert.deepEqual(seen, [...published].reverse())
      const all = ids(await list('channel=pages&limit=200'))
      assert.equal(all.length, 25 + pages)
    })

    test('read state: one, channel and all; read items stay in history', async () => {
      const r1 = await publish(n, tokens.reads!, 'r1')
      const r2 = await publish(n, tokens.reads!, 'r2')
      const s1 = await publish(n, tokens.reads2!, 's1')
      const unread = (ch: string) => list(`channel=${ch}&unread=true`, viewer).then(ids)
      assert.deepEqual(await unread('reads'), [r2, r1])
      const one = await n.client.post(`/api/v1/notifications/${r1}/read`, { cookie: viewer })
      assert.equal(one.status, 200)
      assert.equal(one.body.notification.read, true)
      assert.deepEqual(await unread('reads'), [r2])
      assert.deepEqual(ids(await list('channel=reads', viewer)), [r2, r1])
      // Another reader's state is separate.
      assert.deepEqual(ids(await list('channel=reads&unread=true', operator)), [r2, r1])
      const ch = await n.client.post('/api/v1/channels/reads/read', { cookie: viewer })
      assert.equal(ch.status, 200)
      assert.deepEqual(await unread('reads'), [])
      assert.deepEqual(await unread('reads-two'), [s1])
      const r3 = await publish(n, tokens.reads!, 'r3')
      assert.deepEqual(await unread('reads'), [r3])
      const all = await n.client.post('/api/v1/notifications/read-all', { cookie: viewer })
      assert.equal(all.status, 200)
      assert.deepEqual(await unread('reads'), [])
      assert.deepEqual(await unread('reads-two'), [])
      assert.deepEqual(ids(await list('unread=true', viewer)), [])
      const later = await publish(n, tokens.reads2!, 's2')
      assert.deepEqual(await unread('reads-two'), [later])
      const listed = (await list('channel=reads-two', viewer)).body.notifications
      assert.deepEqual(
        listed.map((x: { read: boolean }) => x.read),
        [false, true],
      )
    })

    test('lifecycle: acknowledge, resolve, idempotent repeats, immutable attributed events', async () => {
      const id = await publish(n, tokens.life!, 'lifecycle')
      const ack = await n.client.post(`/api/v1/notifications/${id}/acknowledge`, { cookie: operator })
      assert.equal(ack.status, 200)
      assert.equal(ack.body.notification.state, 'acknowledged')
      assert.equal(ack.body.changed, true)
      const again = await n.client.post(`/api/v1/notifications/${id}/acknowledge`, { cookie: operator })
      assert.equal(again.status, 200)
      assert.equal(again.body.changed, false)
      const res = await n.client.post(`/api/v1/notifications/${id}/resolve`, { cookie: admin })
      assert.equal(res.body.notification.state, 'resolved')
      assert.equal((await n.client.post(`/api/v1/notifications/${id}/resolve`, { cookie: admin })).body.changed, false)
      const back = await n.client.post(`/api/v1/notifications/${id}/acknowledge`, { cookie: operator })
      assert.equal(back.status, 409)
      assert.equal(back.body.error.code, 'invalid_transition')
      const events = await n.client.get(`/api/v1/notifications/${id}/activity`, { cookie: viewer })
      assert.deepEqual(
        events.body.events.map((e: Record<string, string>) => [e.action, e.from_state, e.to_state, e.username]),
        [
          ['acknowledge', 'received', 'acknowledged', 'otto'],
          ['resolve', 'acknowledged', 'resolved', ADMIN],
        ],
      )
      assert.deepEqual(ids(await list('channel=life&state=resolved')), [id])
      // The database itself refuses to change or delete an event.
      await assert.rejects(n.database.db.updateTable('notification_events').set({ username: 'mallory' }).execute())
      await assert.rejects(n.database.db.deleteFrom('notification_events').execute())
      const direct = await publish(n, tokens.life!, 'resolve directly')
      const resolved = await n.client.post(`/api/v1/notifications/${direct}/resolve`, { cookie: operator })
      assert.equal(resolved.body.notification.state, 'resolved')
    })

    test('archive hides from normal history for that reader; restore through the archived filter', async () => {
      const id = await publish(n, tokens.life!, 'archive me')
      const arch = await n.client.post(`/api/v1/notifications/${id}/archive`, { cookie: viewer })
      assert.equal(arch.status, 200)
      assert.equal(arch.body.notification.archived, true)
      assert.ok(!ids(await list('channel=life', viewer)).includes(id))
      assert.ok(ids(await list('channel=life', operator)).includes(id))
      assert.deepEqual(ids(await list('channel=life&state=archived', viewer)), [id])
      const restored = await n.client.post(`/api/v1/notifications/${id}/restore`, { cookie: viewer })
      assert.equal(restored.body.notification.archived, false)
      assert.equal(restored.body.notification.state, 'received')
      assert.ok(ids(await list('channel=life', viewer)).includes(id))
      assert.deepEqual(ids(await list('channel=life&state=archived', viewer)), [])
    })

    test('private channels are invisible to non-members: queries, navigation, items and activity', async () => {
      const id = await publish(n, tokens.hidden!, 'private secret xyzzy')
      assert.deepEqual(ids(await list('q=xyzzy', viewer)), [])
      assert.deepEqual(ids(await list('q=xyzzy', admin)), [id])
      assert.equal((await list('channel=hidden-ops', viewer)).status, 404)
      const nav = await n.client.get('/api/v1/channels', { cookie: viewer })
      assert.ok(!nav.body.channels.some((c: { name: string }) => c.name === 'hidden-ops'))
      for (const path of [`/api/v1/notifications/${id}`, `/api/v1/notifications/${id}/activity`]) {
        const res = await n.client.get(path, { cookie: viewer })
        assert.equal(res.status, 404)
        assert.equal(res.body.error.code, 'notification_not_found')
      }
      for (const action of ['read', 'archive', 'acknowledge', 'resolve']) {
        assert.equal((await n.client.post(`/api/v1/notifications/${id}/${action}`, { cookie: viewer })).status, 404)
      }
      await member(n, admin, 'hidden-ops', 'vera', 'viewer')
      assert.deepEqual(ids(await list('q=xyzzy', viewer)), [id])
      assert.equal((await n.client.get(`/api/v1/notifications/${id}/activity`, { cookie: viewer })).status, 200)
      const devHook = await n.client.post(`/hooks/${DEV_TOKEN}`, { body: { text: 'x', channel: 'hidden-ops' } })
      assert.equal(devHook.status, 200)
      assert.ok(!ids(await list('channel=hidden-ops', admin)).some((x) => x > id))
    })
  })
}

for (const backend of backends) {
  test(`search finds a notification whose text was absent from every earlier one (${backend.name})`, async () => {
    const n = await startNotify(backend)
    try {
      const admin = await n.client.login(ADMIN, ADMIN_PASSWORD)
      const q = () => n.client.get('/api/v1/notifications?q=qwxz-unseen', { cookie: admin })
      assert.deepEqual((await q()).body.notifications, [])
      const id = await publish(n, DEV_TOKEN, 'now qwxz-unseen appears')
      assert.deepEqual(ids(await q()), [id])
    } finally {
      await n.close()
    }
  })
}
