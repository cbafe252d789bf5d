/**
 * Web Push against a local HTTPS push service double (testkit) that checks TTL, Urgency and
 * the VAPID signature and decrypts every message with the subscription's own keys (RFC 8291):
 * subscribe, deliver by channel visibility and per-channel choice, revoke (owner only),
 * expired endpoints removed, the 3,993-byte payload limit, one VAPID key per cluster, and
 * on PostgreSQL two processes pushing each notification once.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import {
  type BrowserSubscription,
  createTestCa,
  type PushServiceDouble,
  startPushService,
  waitFor,
} from '@gatehouse/testkit'
import { MAX_PUSH_PAYLOAD, pushPayload } from '../src/push/payload.ts'
import { endpointProblem } from '../src/push/sender.ts'
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
  type StartOptions,
  startNotify,
} from './helpers.ts'

const ca = createTestCa()
let push: PushServiceDouble
before(async () => {
  push = await startPushService(ca)
})
after(async () => {
  await push.close()
  ca.remove()
})

// No push budget here (the counts below are exact); the storm test sets one.
const PUSH_ENV = {
  NOTIFY_PUSH_ALLOW_PRIVATE_ENDPOINTS: 'true',
  NOTIFY_PUSH_CONTACT: 'mailto:ops@example.org',
  NOTIFY_PUSH_BURST: '0',
}

function start(backend: (typeof backends)[number], options: StartOptions = {}): Promise<Notify> {
  return startNotify(backend, { ...options, env: { ...PUSH_ENV, ...options.env }, pushCa: ca.ca })
}

function idOf(sub: BrowserSubscription): string {
  return sub.endpoint.slice(sub.endpoint.lastIndexOf('/') + 1)
}

/** The decrypted messages a browser subscription received. */
function inbox(sub: BrowserSubscription): Json[] {
  return push.received.filter((r) => r.subscription === idOf(sub)).map((r) => JSON.parse(r.plaintext))
}

async function subscribe(n: Notify, cookie: string, sub: BrowserSubscription, label?: string): Promise<string> {
  const res = await n.client.post('/api/v1/push/subscriptions', {
    cookie,
    body: { ...sub, expirationTime: null, ...(label ? { label } : {}) },
  })
  assert.equal(res.status, 201, res.text)
  return res.body.subscription.id
}

async function setup(n: Notify) {
  const admin = await n.client.login(ADMIN, ADMIN_PASSWORD)
  const ops = await channel(n, admin, 'ops')
  const secret = await channel(n, admin, 'secret', 'private')
  const marker = await channel(n, admin, 'marker', 'private')
  const viewer = await reader(n, admin, 'vera')
  const adminSub = push.subscribe()
  await subscribe(n, admin, adminSub)
  /**
   * Wait until every push of earlier notifications is done. Passes run one after another; a
   * marker only the administrator sees may share a pass with earlier items (whose pushes run
   * concurrently with its own), but a second marker stored once the first arrived is read
   * by a later pass, which starts only when that one has finished.
   */
  const settle = async () => {
    for (const round of [1, 2]) {
      const id = await publish(n, marker.token, `marker ${round}`)
      await waitFor('the marker push', () => inbox(adminSub).some((m) => m.id === id))
    }
  }
  return { admin, ops, secret, viewer, adminSub, settle }
}

for (const backend of backends) {
  describe(`web push (${backend.name})`, () => {
    test('a subscriber gets an encrypted, signed push with TTL and urgency for what they may see', async (t) => {
      const n = await start(backend)
      t.after(() => n.close())
      const { admin, ops, secret, viewer, adminSub, settle } = await setup(n)
      const key = await n.client.get('/api/v1/push/key', { cookie: viewer })
      assert.equal(key.status, 200)
      assert.equal(Buffer.from(key.body.public_key, 'base64url').length, 65)
      const viewerSub = push.subscribe()
      await subscribe(n, viewer, viewerSub, 'Chromium on a laptop')

      const hidden = await publish(n, secret.token, 'private: db-1 replication stopped')
      const res = await n.client.post('/api/v1/notifications', {
        token: ops.token,
        body: { version: 1, title: 'Disk full on web-1', summary: '98% used', severity: 'critical', source: 'nagios' },
      })
      assert.equal(res.status, 201, res.text)
      const shown = res.body.notification.id
      await settle()

      const got = inbox(viewerSub)
      assert.deepEqual(
        got.map((m) => m.id),
        [shown],
        'the viewer gets the public item only',
      )
      assert.deepEqual(got[0], {
        v: 1,
        id: shown,
        channel: 'ops',
        title: 'Disk full on web-1',
        body: '98% used',
        severity: 'critical',
        source: 'nagios',
        created_at: got[0].created_at,
        url: `/?notification=${shown}`,
      })
      assert.deepEqual(
        inbox(adminSub)
          .map((m) => m.id)
          .filter((id) => id === hidden || id === shown),
        [hidden, shown],
        'the administrator sees the private channel too',
      )
      const wire = push.received.find((r) => r.subscription === idOf(viewerSub))
      assert.equal(wire?.ttl, 24 * 3600)
      assert.equal(wire?.urgency, 'high')
      assert.equal(wire?.vapid.sub, 'mailto:ops@example.org')
      assert.equal(wire?.vapid.key, key.body.public_key)
      const info = push.received.find((r) => JSON.parse(r.plaintext).id === hidden)
      assert.equal(info?.urgency, 'low', 'info is low urgency')
      assert.deepEqual(push.refused, [])
      // No secret travels: no hook token, no webhook id.
      for (const r of push.received) {
        assert.ok(!r.plaintext.includes(ops.token) && !r.plaintext.includes(ops.webhookId))
      }

      // The successes of a pass are recorded once its pushes are all done (one write per pass).
      const list = await waitFor('the success recorded', async () => {
        const l = await n.client.get('/api/v1/push/subscriptions', { cookie: viewer })
        return l.body.subscriptions[0]?.last_success_at ? l : undefined
      })
      assert.equal(list.body.subscriptions.length, 1)
      assert.equal(list.body.subscriptions[0].label, 'Chromium on a laptop')
      assert.equal(list.body.subscriptions[0].endpoint, viewerSub.endpoint)
      assert.ok(list.body.subscriptions[0].last_success_at)
      assert.equal(list.body.subscriptions[0].keys, undefined, 'keys are never returned')
      await member(n, admin, 'secret', 'vera', 'viewer')
      const now = await publish(n, secret.token, 'private, and vera is a member now')
      await settle()
      assert.ok(inbox(viewerSub).some((m) => m.id === now))
    })

    test('a storm: a browser gets its burst, then summaries of what was held, and every notification is told once', async (t) => {
      const n = await start(backend, { env: { NOTIFY_PUSH_BURST: '3', NOTIFY_PUSH_INTERVAL: '2s' } })
      t.after(() => n.close())
      const admin = await n.client.login(ADMIN, ADMIN_PASSWORD)
      const ops = await channel(n, admin, 'ops')
      const db = await channel(n, admin, 'db')
      const sub = push.subscribe()
      await subscribe(n, admin, sub)
      const ids: number[] = []
      for (let i = 0; i < 10; i++) {
        const res = await n.client.post('/api/v1/notifications', {
          token: i % 3 === 2 ? db.token : ops.token,
          body: { version: 1, title: `flapping ${i}`, severity: i === 7 ? 'error' : 'warning' },
        })
        assert.equal(res.status, 201, res.text)
        ids.push(res.body.notification.id)
      }
      // Every notification is pushed alone or counted in a summary, exactly once.
      const told = () => inbox(sub).reduce((sum, m) => sum + (m.summary ? m.count : 1), 0)
      await waitFor('all ten told', () => told() === 10, 30_000)
      const got = inbox(sub)
      // Pushes of one pass go out concurrently: arrival order within a pass is not fixed.
      const alone = got.filter((m) => !m.summary).map((m) => m.id)
      assert.ok(
        ids.slice(0, 3).every((id) => alone.includes(id)),
        `the burst: the first three, each alone (${alone})`,
      )
      const summaries = got.filter((m) => m.summary)
      assert.ok(summaries.length >= 1 && got.length < 10, `held pushes were summarised: ${JSON.stringify(got)}`)
      const first = summaries[0]
      assert.deepEqual(Object.keys(first).sort(), [
        'body',
        'count',
        'created_at',
        'severity',
        'summary',
        'title',
        'url',
        'v',
      ])
      assert.equal(first.title, `${first.count} more notification${first.count === 1 ? '' : 's'}`)
      assert.match(first.body, /^#(ops|db) \d+(, #(ops|db) \d+)?$/)
      assert.equal(first.url, '/')
      const errorTold = got.find((m) => m.id === ids[7]) ?? summaries.find((m) => m.severity === 'error')
      assert.ok(errorTold, 'the error item is pushed alone, or raises its summary to error')
      const wire = push.received.filter((r) => r.subscription === idOf(sub))
      assert.equal(
        wire.find((r) => JSON.parse(r.plaintext).severity === 'error')?.urgency,
        'high',
        'a summary holding an error wakes the device like the error would',
      )
      const metrics = await n.client.get('/metrics')
      const held = Number(/^notify_push_held_total (\d+)$/m.exec(metrics.text)?.[1])
      assert.equal(held, 10 - alone.length)
      // The inbox has every one: only pushes are budgeted.
      const listed = await n.client.get('/api/v1/notifications?limit=50', { cookie: admin })
      assert.equal(listed.body.notifications.length, 10)
    })

    test('a test push reaches each of the reader own browsers, once per 10 s', async (t) => {
      const n = await start(backend)
      t.after(() => n.close())
      const { viewer } = await setup(n)
      assert.equal((await n.client.post('/api/v1/push/test')).status, 401)
      const none = await n.client.post('/api/v1/push/test', { cookie: viewer })
      assert.deepEqual(none.body, { results: [] })
      const again = await n.client.post('/api/v1/push/test', { cookie: viewer })
      assert.equal(again.status, 429)
      assert.equal(again.body.error.code, 'push_test_throttled')
    })

    test('a test push reports per browser and removes an unsubscribed one', async (t) => {
      const n = await start(backend)
      t.after(() => n.close())
      const { viewer } = await setup(n)
      const ok = push.subscribe()
      const gone = push.subscribe()
      await subscribe(n, viewer, ok, 'laptop')
      await subscribe(n, viewer, gone, 'old phone')
      push.expire(gone)
      const res = await n.client.post('/api/v1/push/test', { cookie: viewer })
      assert.equal(res.status, 200)
      assert.deepEqual(res.body.results.map((r: Json) => [r.label, r.result, r.status]).sort(), [
        ['laptop', 'sent', 201],
        ['old phone', 'gone', 410],
      ])
      assert.equal(inbox(ok).at(-1).title, 'Test from Notify')
      const list = await n.client.get('/api/v1/push/subscriptions', { cookie: viewer })
      assert.deepEqual(
        list.body.subscriptions.map((s: Json) => s.label),
        ['laptop'],
      )
    })

    test('per-channel choice: all, important (warning and up) or off', async (t) => {
      const n = await start(backend)
      t.after(() => n.close())
      const { ops, viewer, settle } = await setup(n)
      const sub = push.subscribe()
      await subscribe(n, viewer, sub)
      const prefs = await n.client.get('/api/v1/push/preferences', { cookie: viewer })
      assert.deepEqual(
        prefs.body.channels.map((c: Json) => [c.channel, c.mode]),
        [
          ['general', 'all'],
          ['ops', 'all'],
        ],
        'only visible channels (not secret, not marker), default all',
      )
      const card = (severity: string) =>
        n.client.post('/api/v1/notifications', { token: ops.token, body: { version: 1, title: severity, severity } })
      const set = await n.client.put('/api/v1/push/preferences/ops', { cookie: viewer, body: { mode: 'important' } })
      assert.equal(set.status, 200)
      await card('info')
      await card('warning')
      await settle()
      assert.deepEqual(
        inbox(sub).map((m) => m.title),
        ['warning'],
      )
      await n.client.put('/api/v1/push/preferences/ops', { cookie: viewer, body: { mode: 'off' } })
      await card('critical')
      await settle()
      assert.equal(inbox(sub).length, 1, 'off sends nothing')
      const back = await n.client.get('/api/v1/push/preferences', { cookie: viewer })
      assert.equal(back.body.channels.find((c: Json) => c.channel === 'ops').mode, 'off')
      // A hidden channel is a missing one; a bad mode is a clear 400.
      const hidden = await n.client.put('/api/v1/push/preferences/secret', { cookie: viewer, body: { mode: 'all' } })
      assert.equal(hidden.status, 404)
      assert.equal(hidden.body.error.code, 'channel_not_found')
      const bad = await n.client.put('/api/v1/push/preferences/ops', { cookie: viewer, body: { mode: 'loud' } })
      assert.equal(bad.status, 400)
    })

    test('only the owner revokes; a revoked or expired subscription gets nothing more', async (t) => {
      const n = await start(backend)
      t.after(() => n.close())
      const { admin, ops, viewer, settle } = await setup(n)
      const sub = push.subscribe()
      const id = await subscribe(n, viewer, sub)
      // Another reader, even an administrator, cannot revoke it (and cannot tell it exists).
      const other = await n.client.delete(`/api/v1/push/subscriptions/${id}`, { cookie: admin })
      assert.equal(other.status, 404)
      assert.equal(other.body.error.code, 'push_subscription_not_found')
      const mine = await n.client.delete(`/api/v1/push/subscriptions/${id}`, { cookie: viewer })
      assert.equal(mine.status, 204)
      await publish(n, ops.token, 'after revoke')
      await settle()
      assert.equal(inbox(sub).length, 0)

      // The push service answers 410 Gone for an unsubscribed browser: the row goes away.
      const sub2 = push.subscribe()
      await subscribe(n, viewer, sub2)
      push.expire(sub2)
      await publish(n, ops.token, 'to an expired endpoint')
      await waitFor('the expired subscription removed', async () => {
        const list = await n.client.get('/api/v1/push/subscriptions', { cookie: viewer })
        return list.body.subscriptions.length === 0 ? true : undefined
      })
      // Other failures are kept and shown to the owner.
      const sub3 = push.subscribe()
      await subscribe(n, viewer, sub3)
      push.fail(sub3, 500)
      await publish(n, ops.token, 'to a failing push service')
      const failing = await waitFor('the failure recorded', async () => {
        const list = await n.client.get('/api/v1/push/subscriptions', { cookie: viewer })
        return list.body.subscriptions[0]?.last_failure ?? undefined
      })
      assert.match(failing, /^500 at \d{4}-/)
    })

    test('large cards send a summary and a link under 3,993 bytes', async (t) => {
      const n = await start(backend)
      t.after(() => n.close())
      const { ops, adminSub, settle } = await setup(n)
      const summary = 'Ünïcödé € '.repeat(300)
      const res = await n.client.post('/api/v1/notifications', {
        token: ops.token,
        body: {
          version: 1,
          title: 'Big card',
          summary,
          severity: 'warning',
          fields: Array.from({ length: 20 }, (_, i) => ({ label: `f${i}`, value: 'x'.repeat(200) })),
        },
      })
      assert.equal(res.status, 201, res.text)
      await settle()
      const wire = push.received.find(
        (r) => r.subscription === idOf(adminSub) && JSON.parse(r.plaintext).id === res.body.notification.id,
      )
      assert.ok(wire)
      assert.ok(Buffer.byteLength(wire.plaintext) <= MAX_PUSH_PAYLOAD)
      assert.ok(wire.bodyBytes <= 4096)
      assert.equal(wire.urgency, 'normal')
      const msg = JSON.parse(wire.plaintext)
      assert.equal(msg.truncated, true)
      assert.equal(msg.title, 'Big card')
      assert.ok(summary.startsWith(msg.body.slice(0, -1)) && msg.body.endsWith('…'))
      assert.equal(msg.url, `/?notification=${msg.id}`)
      assert.ok(inbox(adminSub).length >= 2)
    })

    test('bad subscriptions are refused with a clear error; readers only; at most 20 each', async (t) => {
      const n = await start(backend)
      t.after(() => n.close())
      const { viewer } = await setup(n)
      const good = push.subscribe()
      const post = (body: unknown) => n.client.post('/api/v1/push/subscriptions', { cookie: viewer, body })
      assert.equal((await n.client.post('/api/v1/push/subscriptions', { body: good })).status, 401)
      assert.equal((await n.client.get('/api/v1/push/key')).status, 401)
      const cases: [string, unknown][] = [
        ['http endpoint', { ...good, endpoint: good.endpoint.replace('https:', 'http:') }],
        ['not a URL', { ...good, endpoint: 'push me' }],
        ['short key', { ...good, keys: { ...good.keys, p256dh: 'BAAA' } }],
        ['key off the curve', { ...good, keys: { ...good.keys, p256dh: Buffer.alloc(65, 4).toString('base64url') } }],
        ['auth of 15 bytes', { ...good, keys: { ...good.keys, auth: Buffer.alloc(15).toString('base64url') } }],
        ['unknown field', { ...good, extra: 1 }],
      ]
      for (const [what, body] of cases) {
        const res = await post(body)
        assert.equal(res.status, 400, what)
        assert.ok(['invalid_push_subscription', 'invalid_request'].includes(res.body.error.code), what)
      }
      const list = await n.client.get('/api/v1/push/subscriptions', { cookie: viewer })
      assert.equal(list.body.subscriptions.length, 0, 'nothing was stored')
      // The same browser subscribing again replaces its row (200), it does not add one.
      assert.equal((await post(good)).status, 201)
      assert.equal((await post(good)).status, 200)
      for (let i = 1; i < 20; i++) assert.equal((await post(push.subscribe())).status, 201)
      const over = await post(push.subscribe())
      assert.equal(over.status, 409)
      assert.equal(over.body.error.code, 'push_subscription_limit')
    })
  })
}

test('push endpoints: https only; loopback, private and link-local refused unless allowed', () => {
  assert.equal(endpointProblem('https://push.example.org/x', false), undefined)
  assert.match(endpointProblem('http://push.example.org/x', false) ?? '', /https/)
  for (const host of ['127.0.0.1', '[::1]', '10.0.0.1', '192.168.1.2', '169.254.169.254', 'localhost', '[fd00::1]'])
    assert.match(endpointProblem(`https://${host}/x`, false) ?? '', /loopback|private/, host)
  assert.equal(endpointProblem('https://127.0.0.1/x', true), undefined)
  assert.match(endpointProblem('https://u:p@push.example.org/x', false) ?? '', /credentials/)
})

test('a compatibility message is pushed as plain text: link labels, no markdown markers', () => {
  const text = '**Deploy** finished: <https://ci.example/1|build 1>\nsee [docs](https://d.example/x) and `make`'
  const msg = JSON.parse(
    pushPayload({
      id: 9,
      channel: 'ci',
      kind: 'compat',
      title: text.slice(0, 40),
      body: text,
      source: null,
      severity: 'success',
      content: JSON.stringify({ text, attachments: [] }),
      created_at: '2026-11-25T10:00:00.000Z',
    }),
  )
  assert.equal(msg.title, 'Deploy finished: build 1')
  assert.equal(msg.body, 'Deploy finished: build 1\nsee docs and make')
})

describe('web push across processes (postgres)', () => {
  const pg = backends.find((b) => b.name === 'postgres')
  test('one VAPID key for the cluster, and each notification pushed once', async (t) => {
    assert.ok(pg)
    const url = await pg.url()
    const shared = { url: async () => url, name: 'postgres' as const }
    const a = await start(shared)
    t.after(() => a.close())
    const b = await start(shared)
    t.after(() => b.close())
    const admin = await a.client.login(ADMIN, ADMIN_PASSWORD)
    const ka = await a.client.get('/api/v1/push/key', { cookie: admin })
    const kb = await b.client.get('/api/v1/push/key', { cookie: admin })
    assert.equal(ka.body.public_key, kb.body.public_key)
    const ops = await channel(a, admin, 'ops')
    const sub = push.subscribe()
    await subscribe(a, admin, sub)
    const ids: number[] = []
    for (let i = 0; i < 20; i++) ids.push(await publish(i % 2 ? a : b, ops.token, `alert ${i}`))
    await waitFor('every push', () => (inbox(sub).length >= ids.length ? true : undefined))
    // Pushes of a later pass may still be in flight: one more marker proves none is left.
    const last = await publish(a, ops.token, 'last')
    await waitFor('the last push', () => inbox(sub).some((m) => m.id === last))
    const got = inbox(sub)
      .map((m) => m.id)
      .filter((id) => id !== last)
      .sort((x, y) => x - y)
    assert.deepEqual(got, ids, 'every notification exactly once')
  })
})

test('the push budget: a burst, then one push an interval, a summary for what was held, by channel and worst severity', async () => {
  const { PushBudgets } = await import('../src/push/budget.ts')
  let now = 0
  const budgets = new PushBudgets(2, 1000, () => now)
  const sub = { id: 's1' } as never
  assert.deepEqual(
    ['info', 'info', 'warning', 'error', 'info'].map((sev, i) =>
      budgets.admit(sub, i === 3 ? 'db' : 'ops', sev as 'info'),
    ),
    ['send', 'send', 'held', 'held', 'held'],
  )
  assert.deepEqual(budgets.due(), [], 'no push allowed yet')
  now = 999
  assert.deepEqual(budgets.due(), [])
  now = 1000
  assert.deepEqual(budgets.due(), [sub], 'one push allowed: the summary')
  assert.deepEqual(budgets.take('s1'), {
    count: 3,
    channels: [
      { channel: 'ops', count: 2 },
      { channel: 'db', count: 1 },
    ],
    severity: 'error',
  })
  assert.equal(budgets.take('s1'), undefined, 'told once')
  assert.equal(budgets.admit(sub, 'ops', 'info'), 'held', 'the summary spent the push')
  now = 2000
  assert.equal(budgets.admit(sub, 'ops', 'critical'), 'summary', 'one push allowed, with one held: a summary of both')
  assert.deepEqual(budgets.take('s1'), { count: 2, channels: [{ channel: 'ops', count: 2 }], severity: 'critical' })
  now = 10_000
  assert.deepEqual(budgets.due(), [], 'nothing held')
  assert.deepEqual(
    ['send', 'send', 'held'],
    ['a', 'b', 'c'].map(() => budgets.admit(sub, 'ops', 'info')),
    'refilled to the burst, not beyond',
  )
  const unlimited = new PushBudgets(0, 1000, () => now)
  assert.ok(Array.from({ length: 100 }, () => unlimited.admit(sub, 'ops', 'info')).every((a) => a === 'send'))
})
