import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { hashToken } from '@gatehouse/kit'
import { hashPassword, verifyPassword } from '../src/auth/passwords.ts'
import { UserService } from '../src/users/service.ts'
import { ADMIN, ADMIN_PASSWORD, backends, DEV_TOKEN, type Notify, startNotify } from './helpers.ts'

test('passwords: bcrypt over a SHA-256 pre-hash, so bytes past 72 still count', async () => {
  const long = 'ä'.repeat(40) // 80 UTF-8 bytes
  const hash = await hashPassword(`${long}A`, 4)
  assert.match(hash, /^\$2[aby]\$04\$/)
  assert.equal(await verifyPassword(`${long}A`, hash), true)
  assert.equal(await verifyPassword(`${long}B`, hash), false)
  assert.equal(await verifyPassword('x', null), false)
  assert.equal(await verifyPassword('x', 'not-a-hash'), false)
})

for (const backend of backends) {
  describe(`readers and sessions (${backend.name})`, () => {
    let n: Notify
    before(async () => {
      n = await startNotify(backend)
    })
    after(() => n.close())

    test('login sets an HttpOnly SameSite=Strict session cookie whose secret is stored only hashed; logout ends it', async () => {
      const res = await n.client.post('/api/v1/auth/login', { body: { username: ADMIN, password: ADMIN_PASSWORD } })
      assert.equal(res.status, 200)
      assert.equal(res.body.user.admin, true)
      const setCookie = res.headers.get('set-cookie')!
      assert.match(setCookie, /HttpOnly/)
      assert.match(setCookie, /SameSite=Strict/)
      assert.doesNotMatch(setCookie, /Secure/) // http public URL
      const cookie = setCookie.split(';')[0]!
      const secret = cookie.split('=')[1]!
      const rows = await n.database.db.selectFrom('sessions').select('token_hash').execute()
      assert.ok(rows.some((r) => r.token_hash === hashToken(secret)))
      assert.ok(rows.every((r) => r.token_hash !== secret))
      assert.equal((await n.client.get('/api/v1/auth/me', { cookie })).body.user.username, ADMIN)
      assert.equal((await n.client.post('/api/v1/auth/logout', { cookie })).status, 204)
      const me = await n.client.get('/api/v1/auth/me', { cookie })
      assert.equal(me.status, 401)
      assert.equal(me.body.error.code, 'session_required')
    })

    test('wrong passwords, unknown and system users get the same 401', async () => {
      await n.database.db
        .insertInto('users')
        .values({
          id: 'sys-1',
          username: 'robot',
          kind: 'system',
          auth_type: 'none',
          oidc_subject: null,
          password_hash: null,
          is_admin: 0,
          enabled: 1,
          created_at: new Date().toISOString(),
        })
        .execute()
      for (const [username, password] of [
        [ADMIN, 'wrong-password-1'],
        ['nobody', ADMIN_PASSWORD],
        ['robot', ADMIN_PASSWORD],
      ]) {
        const res = await n.client.post('/api/v1/auth/login', { body: { username, password } })
        assert.equal(res.status, 401)
        assert.equal(res.body.error.code, 'login_failed')
        assert.equal(res.headers.get('set-cookie'), null)
      }
    })

    test('readers: passwords of at least 12 characters; disabled readers lose their sessions', async () => {
      const admin = await n.client.login(ADMIN, ADMIN_PASSWORD)
      const short = await n.client.post('/api/v1/users', {
        cookie: admin,
        body: { username: 'shorty', password: 'short' },
      })
      assert.equal(short.status, 400)
      const ok = await n.client.post('/api/v1/users', {
        cookie: admin,
        body: { username: 'dora', password: 'dora-password-1' },
      })
      assert.equal(ok.status, 201)
      assert.equal(ok.body.user.admin, false)
      assert.equal(ok.body.user.password_hash, undefined)
      const dup = await n.client.post('/api/v1/users', {
        cookie: admin,
        body: { username: 'dora', password: 'dora-password-2' },
      })
      assert.equal(dup.status, 409)
      const dora = await n.client.login('dora', 'dora-password-1')
      assert.equal((await n.client.get('/api/v1/auth/me', { cookie: dora })).status, 200)
      await n.database.db.updateTable('users').set({ enabled: 0 }).where('username', '=', 'dora').execute()
      assert.equal((await n.client.get('/api/v1/auth/me', { cookie: dora })).status, 401)
      const list = await n.client.get('/api/v1/users', { cookie: admin })
      assert.ok(list.body.users.some((u: { username: string }) => u.username === 'dora'))
    })

    test('browser mutations must carry the public origin and host; X-Forwarded-* is ignored', async () => {
      const admin = await n.client.login(ADMIN, ADMIN_PASSWORD)
      const body = { name: 'origin-test' }
      for (const r of [
        { origin: 'http://evil.example' },
        { origin: null },
        { origin: 'http://localhost' },
        {
          headers: { 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' },
          origin: 'https://evil.example',
        },
      ]) {
        const res = await n.client.post('/api/v1/channels', { cookie: admin, body, ...r })
        assert.equal(res.status, 403, JSON.stringify(r))
        assert.equal(res.body.error.code, 'origin_mismatch')
      }
      const login = await n.client.post('/api/v1/auth/login', {
        body: { username: ADMIN, password: ADMIN_PASSWORD },
        origin: 'http://evil.example',
      })
      assert.equal(login.status, 403)
      const ok = await n.client.post('/api/v1/channels', { cookie: admin, body })
      assert.equal(ok.status, 201)
      // Token-authenticated publishing carries no cookie and needs no origin.
      assert.equal((await n.client.post('/api/v1/messages', { token: DEV_TOKEN, body: { text: 'x' } })).status, 201)
    })

    test('the bootstrap administrator follows the environment password across restarts', async () => {
      const users = new UserService(n.database.db, 4)
      await users.ensureBootstrapAdmin(ADMIN, 'a-new-password-456')
      await assert.rejects(users.login(ADMIN, ADMIN_PASSWORD), { code: 'login_failed' })
      assert.equal((await users.login(ADMIN, 'a-new-password-456')).is_admin, 1)
      await users.ensureBootstrapAdmin(ADMIN, ADMIN_PASSWORD)
      assert.equal((await users.login(ADMIN, ADMIN_PASSWORD)).username, ADMIN)
    })
  })
}

describe('https public origin', () => {
  test('session cookies are marked Secure', async () => {
    const n = await startNotify(backends[0]!, { env: { NOTIFY_PUBLIC_URL: 'https://notify.example' } })
    try {
      // The host check fails for this loopback address, so sign in through the service directly.
      const res = await n.app.inject({
        method: 'POST',
        url: '/api/v1/auth/login',
        headers: { host: 'notify.example', origin: 'https://notify.example' },
        payload: { username: ADMIN, password: ADMIN_PASSWORD },
      })
      assert.equal(res.statusCode, 200)
      assert.match(String(res.headers['set-cookie']), /; Secure/)
    } finally {
      await n.close()
    }
  })
})

describe('development mode (no reader password)', () => {
  test('every request acts as the local administrator, on loopback hosts only', async () => {
    const n = await startNotify(backends[0]!, { auth: false })
    try {
      const me = await n.client.get('/api/v1/auth/me')
      assert.equal(me.status, 200)
      assert.equal(me.body.user.username, 'local')
      assert.equal(me.body.auth, false)
      assert.equal((await n.client.post('/api/v1/channels', { body: { name: 'dev' } })).status, 201)
      const cross = await n.client.post('/api/v1/channels', { body: { name: 'dev2' }, origin: 'http://evil.example' })
      assert.equal(cross.status, 403)
      const rebinding = await n.app.inject({
        method: 'GET',
        url: '/api/v1/notifications',
        headers: { host: 'evil.example' },
      })
      assert.equal(rebinding.statusCode, 403)
      assert.equal(rebinding.json().error.code, 'host_not_allowed')
      const login = await n.client.post('/api/v1/auth/login', {
        body: { username: 'local', password: 'whatever-123456' },
      })
      assert.equal(login.status, 400)
    } finally {
      await n.close()
    }
  })
})
