/**
 * Findings of the acceptance and security review (issue #12) on both databases: NUL
 * characters refused as 400 on every text path (and a refused hook notification is not
 * half-stored), compatibility-hook payload rules, and sign-in throttling.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { ADMIN, ADMIN_PASSWORD, backends, count, DEV_TOKEN, type Notify, reader, startNotify } from './helpers.ts'

for (const backend of backends) {
  describe(`NUL characters and compatibility hooks (${backend.name})`, () => {
    let n: Notify
    let admin: string
    before(async () => {
      n = await startNotify(backend)
      admin = await n.client.login(ADMIN, ADMIN_PASSWORD)
    })
    after(() => n.close())

    const refused = async (
      res: { status: number; body: { error?: { code: string; message: string } } },
      code: string,
    ) => {
      assert.equal(res.status, 400, JSON.stringify(res.body))
      assert.equal(res.body.error?.code, code)
    }

    test('a NUL in a hook payload (JSON escape, raw, or form) is a 400 and nothing is stored', async () => {
      const before = await count(n)
      const hook = `/hooks/${DEV_TOKEN}`
      await refused(
        await n.client.post(hook, { raw: '{"text":"a\\u0000b"}', type: 'application/json' }),
        'invalid_request',
      )
      await refused(
        await n.client.post(hook, { raw: '{"text":"a\u0000b"}', type: 'application/json' }),
        'invalid_request',
      )
      const form = `payload=${encodeURIComponent('{"text":"x","attachments":[{"text":"\u0000"}]}')}`
      const res = await n.client.post(hook, { raw: form, type: 'application/x-www-form-urlencoded' })
      await refused(res, 'invalid_request')
      assert.match(res.body.error.message, /payload\.attachments\[0\]\.text contains a NUL/)
      // A plain body is the message text (ntfy style): a NUL in it is refused like in /api/v1/messages.
      await refused(await n.client.post(hook, { raw: 'disk\u0000full', type: 'text/plain' }), 'invalid_request')
      // Delivery is synchronous with the answer: a later good notification is stored, the refused ones never.
      assert.equal((await n.client.post(hook, { body: { text: 'after the NULs' } })).status, 200)
      assert.equal(await count(n), before + 1)
    })

    test('a NUL in messages, cards, sign-in, search and channel names is a 400', async () => {
      await refused(
        await n.client.post('/api/v1/messages', { token: DEV_TOKEN, raw: 'a\u0000', type: 'text/plain' }),
        'invalid_request',
      )
      await refused(
        await n.client.post('/api/v1/messages', {
          token: DEV_TOKEN,
          raw: '{"text":"\\u0000"}',
          type: 'application/json',
        }),
        'invalid_request',
      )
      await refused(
        await n.client.post('/api/v1/notifications', { token: DEV_TOKEN, body: { version: 1, title: 't\u0000' } }),
        'invalid_request',
      )
      await refused(
        await n.client.post('/api/v1/auth/login', { body: { username: 'a\u0000', password: 'x' } }),
        'invalid_request',
      )
      await refused(await n.client.get('/api/v1/notifications?q=%00', { cookie: admin }), 'invalid_request')
      await refused(
        await n.client.post('/api/v1/channels', { cookie: admin, body: { name: 'c\u0000' } }),
        'invalid_request',
      )
    })

    test('payload= without a Content-Type is read as the form (Mattermost)', async () => {
      const raw = `payload=${encodeURIComponent(JSON.stringify({ text: 'form without a type' }))}`
      const res = await fetch(`${n.base}/hooks/${DEV_TOKEN}`, { method: 'POST', body: new TextEncoder().encode(raw) })
      assert.equal(res.status, 200, await res.clone().text())
      const latest = await n.client.get('/api/v1/notifications?limit=1', { cookie: admin })
      assert.equal(latest.body.notifications[0].body, 'form without a type')
    })

    test('text that is not a string is refused, not stored as a string', async () => {
      const before = await count(n)
      for (const body of [
        { text: 12345 },
        { text: true },
        { text: 'x', username: 7 },
        { attachments: [{ text: false }] },
      ]) {
        await refused(await n.client.post(`/hooks/${DEV_TOKEN}`, { body }), 'invalid_payload')
      }
      assert.equal(await count(n), before)
    })

    test('an unsafe URL in an attachment or action is refused, like in cards', async () => {
      const before = await count(n)
      const bad: unknown[] = [
        { text: 'x', attachments: [{ text: 'a', title_link: 'javascript:alert(1)' }] },
        { text: 'x', attachments: [{ text: 'a', author_link: 'data:text/html,<b>x</b>' }] },
        { text: 'x', attachments: [{ text: 'a', image_url: 'vbscript:msgbox(1)' }] },
        { text: 'x', attachments: [{ text: 'a', actions: [{ type: 'button', text: 'go', url: 'javascript:x' }] }] },
        { text: 'x', attachments: [{ text: 'a', actions: [{ name: 'b', integration: { url: 'data:,x' } }] }] },
      ]
      for (const body of bad) {
        const res = await n.client.post(`/hooks/${DEV_TOKEN}`, { body })
        await refused(res, 'invalid_payload')
        assert.match(res.body.error.message, /must be an absolute http or https URL/)
      }
      assert.equal(await count(n), before)
      const ok = await n.client.post(`/hooks/${DEV_TOKEN}`, {
        body: { text: 'x', attachments: [{ text: 'a', title_link: 'https://ci.example/1', image_url: '' }] },
      })
      assert.equal(ok.status, 200)
    })
  })

  describe(`sign-in throttling (${backend.name})`, () => {
    let n: Notify
    before(async () => {
      // A long window: the test never depends on when a window ends.
      n = await startNotify(backend, {
        env: {
          NOTIFY_LOGIN_THROTTLE_WINDOW: '1h',
          NOTIFY_LOGIN_ATTEMPTS_PER_ACCOUNT: '5',
          NOTIFY_LOGIN_ATTEMPTS_PER_ADDRESS: '24',
        },
      })
      const admin = await n.client.login(ADMIN, ADMIN_PASSWORD)
      await reader(n, admin, 'victim')
      await reader(n, admin, 'bystander')
    })
    after(() => n.close())

    const login = (username: string, password: string) =>
      n.client.post('/api/v1/auth/login', { body: { username, password } })

    test('parallel wrong passwords for one account: at most the limit is checked, the rest get 429 with Retry-After', async () => {
      const results = await Promise.all(Array.from({ length: 16 }, () => login('victim', 'wrong-password-000')))
      const statuses = results.map((r) => r.status)
      // Five per account: reader() signed the victim in once, so four wrong passwords are checked.
      assert.equal(statuses.filter((s) => s === 401).length, 4)
      assert.equal(statuses.filter((s) => s === 429).length, 12)
      const throttled = results.find((r) => r.status === 429)!
      assert.equal(throttled.body.error.code, 'login_throttled')
      const retryAfter = Number(throttled.headers.get('retry-after'))
      assert.ok(Number.isInteger(retryAfter) && retryAfter > 0 && retryAfter <= 3600, String(retryAfter))
      // Even the right password waits for the window: the limit does not reveal it.
      assert.equal((await login('Victim', 'victim-password-123')).status, 429)
      // Another account from the same address is not held by the victim's limit.
      assert.equal((await login('bystander', 'bystander-password-123')).status, 200)
    })

    test('one address trying many accounts is limited too', async () => {
      const statuses: number[] = []
      for (let i = 0; i < 6; i++) statuses.push((await login(`nobody-${i}`, 'wrong-password-000')).status)
      // 24 per address: 3 sign-ins in before() and 16 + 1 + 1 above, so three more are checked.
      assert.deepEqual(statuses, [401, 401, 401, 429, 429, 429])
    })

    test('the limits hold across processes on one database; the counts keep no name or address', async (t) => {
      const url = await backend.url()
      const same = { name: backend.name, url: async () => url }
      const env = {
        NOTIFY_LOGIN_THROTTLE_WINDOW: '1h',
        NOTIFY_LOGIN_ATTEMPTS_PER_ACCOUNT: '6',
        NOTIFY_LOGIN_ATTEMPTS_PER_ADDRESS: '100',
      }
      const a = await startNotify(same, { env })
      t.after(() => a.close())
      const b = await startNotify(same, { env })
      t.after(() => b.close())
      await reader(a, await a.client.login(ADMIN, ADMIN_PASSWORD), 'target')
      const wrong = (on: Notify) =>
        on.client.post('/api/v1/auth/login', { body: { username: 'target', password: 'wrong-password-000' } })
      // Six per account, one spent by reader(): five more checked, on either process.
      const statuses: number[] = []
      for (const on of [a, b, a, b, a, b, a]) statuses.push((await wrong(on)).status)
      assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429, 429])
      const refused = await b.client.post('/api/v1/auth/login', {
        body: { username: 'TARGET', password: 'target-password-123' },
      })
      assert.equal(refused.status, 429)
      const retryAfter = Number(refused.headers.get('retry-after'))
      assert.ok(retryAfter > 3500 && retryAfter <= 3600, String(retryAfter))
      const rows = await a.database.db.selectFrom('login_attempts').selectAll().execute()
      assert.ok(rows.length >= 3, JSON.stringify(rows))
      for (const row of rows) assert.match(row.key, /^[\w-]{43}$/, 'a hash, not the name or the address')
    })
  })
}
