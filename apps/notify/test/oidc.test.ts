import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { loadConfig } from '@gatehouse/kit'
import { freePort, type OidcProvider, startOidcProvider } from '@gatehouse/testkit'
import { finishConfig, schema } from '../src/config.ts'
import { ADMIN, ADMIN_PASSWORD, backends, type Notify, reader, startNotify } from './helpers.ts'

const CLIENT = 'notify-public'

interface Started {
  location: string
  stateCookie: string
}

async function startLogin(n: Notify, returnTo?: string): Promise<Started> {
  const q = returnTo === undefined ? '' : `?return_to=${encodeURIComponent(returnTo)}`
  const res = await fetch(`${n.base}/api/v1/auth/oidc/login${q}`, { redirect: 'manual' })
  assert.equal(res.status, 302)
  const cookie = res.headers.getSetCookie().find((c) => c.startsWith('notify_oidc_state='))!
  assert.match(cookie, /HttpOnly/)
  assert.match(cookie, /SameSite=Lax/)
  return { location: res.headers.get('location')!, stateCookie: cookie.split(';')[0]! }
}

async function finish(callbackUrl: string, stateCookie: string | undefined) {
  const res = await fetch(callbackUrl, { redirect: 'manual', headers: stateCookie ? { cookie: stateCookie } : {} })
  const session = res.headers
    .getSetCookie()
    .find((c) => c.startsWith('notify_session='))
    ?.split(';')[0]
  const text = await res.text()
  return { status: res.status, session, location: res.headers.get('location'), text }
}

async function signIn(n: Notify, op: OidcProvider, subject: string, returnTo?: string) {
  const started = await startLogin(n, returnTo)
  const callback = await op.completeLogin(started.location, subject)
  return finish(callback, started.stateCookie)
}

test('identity-provider settings come together and need reader authentication', () => {
  const base = { NOTIFY_LISTEN: '127.0.0.1:8080', NOTIFY_DATABASE_URL: 'sqlite::memory:' }
  const auth = {
    NOTIFY_READER_USERNAME: 'admin',
    NOTIFY_READER_PASSWORD: 'admin-password-123',
    NOTIFY_PUBLIC_URL: 'https://notify.example.org',
  }
  const load = (env: Record<string, string>) => finishConfig(loadConfig(schema, { env: { ...base, ...env } }).config)
  assert.throws(
    () => load({ ...auth, NOTIFY_OAUTH_ISSUER: 'https://id.example.org' }),
    /NOTIFY_OIDC_CLIENT_ID: required/,
  )
  assert.throws(() => load({ ...auth, NOTIFY_OIDC_CLIENT_ID: 'notify' }), /NOTIFY_OAUTH_ISSUER: required/)
  assert.throws(
    () => load({ NOTIFY_OAUTH_ISSUER: 'https://id.example.org', NOTIFY_OIDC_CLIENT_ID: 'n' }),
    /needs reader authentication/,
  )
  assert.throws(
    () => load({ ...auth, NOTIFY_OAUTH_ISSUER: 'http://id.example.org', NOTIFY_OIDC_CLIENT_ID: 'n' }),
    /must be https/,
  )
  assert.equal(load({ ...auth, NOTIFY_OAUTH_ISSUER: 'https://id.example.org', NOTIFY_OIDC_CLIENT_ID: 'n' }).oidc, true)
  assert.equal(load(auth).oidc, false)
})

for (const backend of backends) {
  describe(`identity-provider sign-in (${backend.name})`, () => {
    let n: Notify
    let op: OidcProvider
    let admin: string
    before(async () => {
      const port = await freePort()
      op = await startOidcProvider({
        redirectUris: [`http://127.0.0.1:${port}/api/v1/auth/oidc/callback`],
        publicClientId: CLIENT,
      })
      n = await startNotify(backend, {
        port,
        env: { NOTIFY_OAUTH_ISSUER: op.issuer, NOTIFY_OIDC_CLIENT_ID: CLIENT },
      })
      admin = await n.client.login(ADMIN, ADMIN_PASSWORD)
    })
    after(async () => {
      await n.close()
      await op.stop()
    })

    test('the first sign-in creates a non-administrator reader keyed by the subject; the next one finds it', async () => {
      assert.deepEqual((await n.client.get('/api/v1/auth/providers')).body, { local: true, oidc: true })
      const first = await signIn(n, op, 'alice', '/#/channel/ops')
      assert.equal(first.status, 303, first.text)
      assert.equal(first.location, '/#/channel/ops')
      assert.ok(first.session)
      const me = await n.client.get('/api/v1/auth/me', { cookie: first.session! })
      assert.equal(me.body.user.username, 'alice')
      assert.equal(me.body.user.auth_type, 'oidc')
      assert.equal(me.body.user.admin, false)
      const again = await signIn(n, op, 'alice')
      assert.equal(again.location, '/')
      const me2 = await n.client.get('/api/v1/auth/me', { cookie: again.session! })
      assert.equal(me2.body.user.id, me.body.user.id)
      const row = await n.database.db
        .selectFrom('users')
        .selectAll()
        .where('id', '=', me.body.user.id)
        .executeTakeFirstOrThrow()
      assert.equal(row.oidc_subject, 'alice')
      assert.equal(row.password_hash, null)
    })

    test('never links an existing account by name or e-mail', async () => {
      const localCookie = await reader(n, admin, 'bob')
      const local = (await n.client.get('/api/v1/auth/me', { cookie: localCookie })).body.user
      // A provider account called bob, and a second one claiming bob's name and e-mail.
      const a = await signIn(n, op, 'bob')
      op.loginAs('mallory', { preferred_username: 'bob', email: 'bob@example.test', name: 'bob' })
      const b = await signIn(n, op, 'mallory')
      const ua = (await n.client.get('/api/v1/auth/me', { cookie: a.session! })).body.user
      const ub = (await n.client.get('/api/v1/auth/me', { cookie: b.session! })).body.user
      assert.equal(new Set([local.id, ua.id, ub.id]).size, 3)
      for (const u of [ua, ub]) {
        assert.match(u.username, /^bob-[0-9a-f]{6}$/)
        assert.equal(u.auth_type, 'oidc')
        assert.equal(u.admin, false)
      }
      // The local bob still signs in with the password and is still a local reader.
      const again = await n.client.login('bob', 'bob-password-123')
      assert.equal((await n.client.get('/api/v1/auth/me', { cookie: again })).body.user.auth_type, 'local')
    })

    test('state: missing cookie, another browser, and replay are refused', async () => {
      const started = await startLogin(n)
      const callback = await op.completeLogin(started.location, 'carol')
      const noCookie = await finish(callback, undefined)
      assert.equal(noCookie.status, 401)
      assert.match(noCookie.text, /oidc_failed/)
      const other = await startLogin(n)
      assert.equal((await finish(callback, other.stateCookie)).status, 401)
      const ok = await finish(callback, started.stateCookie)
      assert.equal(ok.status, 303)
      const replay = await finish(callback, started.stateCookie)
      assert.equal(replay.status, 401)
      assert.equal(replay.session, undefined)
    })

    test('PKCE: a code obtained for one attempt does not complete another', async () => {
      const a = await startLogin(n)
      const b = await startLogin(n)
      const callbackA = new URL(await op.completeLogin(a.location, 'dave'))
      const stateB = new URL(b.location).searchParams.get('state')!
      callbackA.searchParams.set('state', stateB)
      const res = await finish(callbackA.toString(), b.stateCookie)
      assert.equal(res.status, 401)
      assert.equal(res.session, undefined)
      assert.match(res.text, /did not confirm/)
    })

    test('a disabled provider reader cannot sign in; a provider error is a clean 401', async () => {
      const first = await signIn(n, op, 'erin')
      const me = (await n.client.get('/api/v1/auth/me', { cookie: first.session! })).body.user
      await n.client.req('PATCH', `/api/v1/users/${me.username}`, { cookie: admin, body: { enabled: false } })
      const res = await signIn(n, op, 'erin')
      assert.equal(res.status, 401)
      assert.match(res.text, /disabled/)
      const started = await startLogin(n)
      const state = new URL(started.location).searchParams.get('state')!
      const denied = await finish(
        `${n.base}/api/v1/auth/oidc/callback?error=access_denied&state=${state}`,
        started.stateCookie,
      )
      assert.equal(denied.status, 401)
    })

    test('an unreachable provider is a 503 (unavailable); password sign-in still works', async () => {
      const port = await freePort()
      const down = await startNotify(backend, {
        port,
        env: { NOTIFY_OAUTH_ISSUER: 'http://127.0.0.1:9', NOTIFY_OIDC_CLIENT_ID: CLIENT },
      })
      try {
        const res = await fetch(`${down.base}/api/v1/auth/oidc/login`, { redirect: 'manual' })
        assert.equal(res.status, 503)
        assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'unavailable')
        // Password sign-in is unaffected.
        await down.client.login(ADMIN, ADMIN_PASSWORD)
      } finally {
        await down.close()
      }
    })

    test('return_to only accepts same-origin paths', async () => {
      for (const evil of ['//evil.example/x', 'https://evil.example/', '/\\evil.example']) {
        const res = await signIn(n, op, 'alice', evil)
        assert.equal(res.location, '/', evil)
      }
      const metrics = await (await fetch(`${n.base}/metrics`)).text()
      assert.match(metrics, /notify_oidc_logins_total\{result="ok"\} [1-9]/)
      assert.match(metrics, /notify_oidc_logins_total\{result="failed"\} [1-9]/)
    })
  })
}
