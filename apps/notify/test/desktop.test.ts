import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { ADMIN, ADMIN_PASSWORD, backends, type Notify, reader, startNotify } from './helpers.ts'

interface Started {
  request_id: string
  device_code: string
  user_code: string
  verification_url: string
}

for (const backend of backends) {
  describe(`desktop sign-in (${backend.name})`, () => {
    let n: Notify
    let admin: string
    let vera: string
    before(async () => {
      n = await startNotify(backend)
      admin = await n.client.login(ADMIN, ADMIN_PASSWORD)
      vera = await reader(n, admin, 'vera')
    })
    after(() => n.close())

    const start = async (): Promise<Started> => {
      const res = await n.client.post('/api/v1/auth/desktop', { body: { client_name: 'Gatehouse Desktop' } })
      assert.equal(res.status, 201, res.text)
      return res.body
    }
    const poll = (device_code: string) => n.client.post('/api/v1/auth/desktop/token', { body: { device_code } })
    const approve = (s: Started, user_code: string, cookie = vera) =>
      n.client.post(`/api/v1/auth/desktop/${s.request_id}/approve`, { cookie, body: { user_code } })

    test('the whole exchange: start, pending, the reader types the code, one session for the app', async () => {
      const s = await start()
      assert.match(s.user_code, /^[BCDFGHJKMNPQRSTVWXZ]{4}-[BCDFGHJKMNPQRSTVWXZ]{4}$/)
      assert.equal(s.verification_url, `${n.base}/#/desktop/${s.request_id}`)
      const pending = await poll(s.device_code)
      assert.equal(pending.status, 428)
      assert.equal(pending.body.error.code, 'desktop_login_pending')
      const shown = await n.client.get(`/api/v1/auth/desktop/${s.request_id}`, { cookie: vera })
      assert.equal(shown.body.request.client_name, 'Gatehouse Desktop')
      assert.equal(shown.body.request.client_address, '127.0.0.1')
      assert.ok(!shown.text.includes(s.user_code), 'the browser must not be handed the code to approve')
      // Case and separators do not matter.
      const typed = ` ${s.user_code.toLowerCase().replace('-', ' ')} `
      const ok = await approve(s, typed)
      assert.equal(ok.status, 200, ok.text)
      assert.equal(ok.body.request.status, 'approved')
      const redeemed = await poll(s.device_code)
      assert.equal(redeemed.status, 200, redeemed.text)
      assert.match(redeemed.body.token, /^nts_[A-Za-z0-9_-]{43}$/)
      assert.equal(redeemed.body.user.username, 'vera')
      const me = await n.client.get('/api/v1/auth/me', { token: redeemed.body.token })
      assert.equal(me.body.user.username, 'vera')
      // The handoff is single use.
      const reuse = await poll(s.device_code)
      assert.equal(reuse.status, 400)
      assert.equal(reuse.body.error.code, 'desktop_login_failed')
      assert.equal((await approve(s, s.user_code)).status, 400)
      // The app signs out with its bearer session.
      assert.equal((await n.client.post('/api/v1/auth/logout', { token: redeemed.body.token })).status, 204)
      assert.equal((await n.client.get('/api/v1/auth/me', { token: redeemed.body.token })).status, 401)
    })

    test('a wrong code never yields a session; the fifth wrong code fails the request', async () => {
      const s = await start()
      for (let left = 4; left >= 0; left--) {
        const res = await approve(s, 'BBBB-BBBB')
        assert.equal(res.status, 400)
        assert.equal(res.body.error.code, 'desktop_code_mismatch')
        assert.match(res.body.error.message, new RegExp(`${left} attempts left`))
        assert.equal((await poll(s.device_code)).status, left > 0 ? 428 : 400)
      }
      const late = await approve(s, s.user_code)
      assert.equal(late.body.error.code, 'desktop_login_failed')
      const res = await poll(s.device_code)
      assert.equal(res.status, 400)
      assert.equal(res.body.token, undefined)
    })

    test('expiry: an expired request cannot be approved or redeemed, even once approved', async () => {
      const expire = (id: string) =>
        n.database.db
          .updateTable('desktop_logins')
          .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
          .where('id', '=', id)
          .execute()
      const s = await start()
      await expire(s.request_id)
      assert.match((await approve(s, s.user_code)).body.error.message, /expired/)
      assert.match((await poll(s.device_code)).body.error.message, /expired/)
      const t = await start()
      assert.equal((await approve(t, t.user_code)).status, 200)
      await expire(t.request_id)
      const res = await poll(t.device_code)
      assert.equal(res.status, 400)
      assert.match(res.body.error.message, /expired/)
    })

    test('deny, unknown codes, and concurrent polls (exactly one session)', async () => {
      const s = await start()
      assert.equal((await n.client.post(`/api/v1/auth/desktop/${s.request_id}/deny`, { cookie: vera })).status, 204)
      assert.match((await poll(s.device_code)).body.error.message, /denied/)
      assert.match((await poll('not-a-device-code')).body.error.message, /unknown/)
      const t = await start()
      await approve(t, t.user_code)
      const results = await Promise.all([1, 2, 3, 4, 5].map(() => poll(t.device_code)))
      assert.equal(results.filter((r) => r.status === 200).length, 1)
      const metrics = await (await fetch(`${n.base}/metrics`)).text()
      assert.match(metrics, /notify_desktop_logins_total\{result="ok"\} [1-9]/)
      assert.match(metrics, /notify_desktop_logins_total\{result="failed"\} [1-9]/)
      const sessions = await n.database.db.selectFrom('sessions').selectAll().execute()
      assert.equal(new Set(sessions.map((x) => x.token_hash)).size, sessions.length)
    })

    test('approval needs a signed-in reader from the public origin', async () => {
      const s = await start()
      assert.equal((await n.client.get(`/api/v1/auth/desktop/${s.request_id}`)).status, 401)
      assert.equal(
        (await n.client.post(`/api/v1/auth/desktop/${s.request_id}/approve`, { body: { user_code: s.user_code } }))
          .status,
        401,
      )
      assert.equal((await n.client.post(`/api/v1/auth/desktop/${s.request_id}/deny`)).status, 401)
      const t = await start()
      const forged = await n.client.post(`/api/v1/auth/desktop/${t.request_id}/approve`, {
        cookie: vera,
        origin: 'https://evil.example',
        body: { user_code: t.user_code },
      })
      assert.equal(forged.status, 403)
      assert.equal(forged.body.error.code, 'origin_mismatch')
      assert.equal((await poll(t.device_code)).status, 428)
      assert.equal((await n.client.post('/api/v1/auth/desktop', { body: { client_name: 'x', extra: 1 } })).status, 400)
      assert.equal((await n.client.get('/api/v1/auth/desktop/not-a-uuid', { cookie: vera })).status, 400)
    })

    test('starting is rate-limited per address', async () => {
      let last = await n.client.post('/api/v1/auth/desktop', { body: { client_name: 'flood' } })
      for (let i = 0; i < 12 && last.status === 201; i++) {
        last = await n.client.post('/api/v1/auth/desktop', { body: { client_name: 'flood' } })
      }
      assert.equal(last.status, 429)
      assert.equal(last.body.error.code, 'desktop_throttled')
      assert.ok(Number(last.headers.get('retry-after')) >= 1)
    })
  })
}

describe('desktop sign-in in development mode', () => {
  test('is refused: there is no reader to approve', async () => {
    const n = await startNotify(backends[0]!, { auth: false })
    try {
      const res = await n.client.post('/api/v1/auth/desktop', { body: { client_name: 'app' } })
      assert.equal(res.status, 400)
      assert.equal(res.body.error.code, 'desktop_login_failed')
    } finally {
      await n.close()
    }
  })
})
