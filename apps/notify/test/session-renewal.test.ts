/**
 * Sessions that stay alive while used, on SQLite and PostgreSQL: each use past the renewal step
 * moves the end forward (one write), never past the fixed end set at sign-in; an idle session
 * ends; an open stream follows its session's new end instead of ending at the old one.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { hashToken, loadConfig } from '@gatehouse/kit'
import { finishConfig, schema } from '../src/config.ts'
import { ADMIN, ADMIN_PASSWORD, backends, DEV_TOKEN, type Notify, publish, startNotify } from './helpers.ts'
import { SseClient } from './sse.ts'

const HOUR = 3_600_000

for (const backend of backends) {
  describe(`session renewal (${backend.name})`, () => {
    let n: Notify
    before(async () => {
      n = await startNotify(backend, { env: { NOTIFY_SESSION_TTL: '24h', NOTIFY_SESSION_MAX_AGE: '72h' } })
    })
    after(() => n.close())

    const signIn = async () => {
      const res = await n.client.post('/api/v1/auth/login', { body: { username: ADMIN, password: ADMIN_PASSWORD } })
      assert.equal(res.status, 200, res.text)
      const setCookie = res.headers.get('set-cookie') ?? ''
      const cookie = setCookie.split(';')[0]!
      return { cookie, setCookie, hash: hashToken(cookie.slice(cookie.indexOf('=') + 1)) }
    }
    const row = (hash: string) =>
      n.database.db.selectFrom('sessions').selectAll().where('token_hash', '=', hash).executeTakeFirstOrThrow()
    const setRow = (hash: string, values: { expires_at?: string; renew_until?: string | null }) =>
      n.database.db.updateTable('sessions').set(values).where('token_hash', '=', hash).execute()
    const me = (cookie: string) => n.client.get('/api/v1/auth/me', { cookie })

    test('a session ends after NOTIFY_SESSION_TTL idle, at NOTIFY_SESSION_MAX_AGE at the latest; the cookie lasts the maximum', async () => {
      const before = Date.now()
      const s = await signIn()
      assert.match(s.setCookie, /Max-Age=259200(;|$)/, 'the browser keeps the cookie for the maximum age')
      const first = await row(s.hash)
      const expires = Date.parse(first.expires_at)
      assert.ok(expires >= before + 24 * HOUR && expires <= Date.now() + 24 * HOUR, first.expires_at)
      assert.ok(Date.parse(first.renew_until!) - Date.parse(first.created_at) === 72 * HOUR, String(first.renew_until))

      // Used within the hour after its last renewal: nothing written.
      assert.equal((await me(s.cookie)).status, 200)
      assert.equal((await row(s.hash)).expires_at, first.expires_at)

      // Used with 20 hours left: its end moves to a full day from now.
      await setRow(s.hash, { expires_at: new Date(Date.now() + 20 * HOUR).toISOString() })
      const used = Date.now()
      assert.equal((await me(s.cookie)).status, 200)
      const renewed = Date.parse((await row(s.hash)).expires_at)
      assert.ok(renewed >= used + 24 * HOUR && renewed <= Date.now() + 24 * HOUR, 'a day from the use')

      // Near its fixed end, the end is the fixed end, never later.
      const fixedEnd = new Date(Date.now() + 2 * HOUR).toISOString()
      await setRow(s.hash, { expires_at: new Date(Date.now() + HOUR).toISOString(), renew_until: fixedEnd })
      assert.equal((await me(s.cookie)).status, 200)
      assert.equal((await row(s.hash)).expires_at, fixedEnd)

      // Idle past its end: refused, and using it again brings nothing back.
      await setRow(s.hash, { expires_at: new Date(Date.now() - 1000).toISOString() })
      assert.equal((await me(s.cookie)).status, 401)
      assert.ok(Date.parse((await row(s.hash)).expires_at) < Date.now())

      // A session from before renewal existed (no fixed end) keeps the end it had.
      const old = await signIn()
      const oldEnd = new Date(Date.now() + 2 * HOUR).toISOString()
      await setRow(old.hash, { expires_at: oldEnd, renew_until: null })
      assert.equal((await me(old.cookie)).status, 200)
      assert.equal((await row(old.hash)).expires_at, oldEnd)
    })

    test('an open stream follows its session when a use moves the end forward, and ends at the end otherwise', async () => {
      const renewedLater = await signIn()
      const idle = await signIn()
      // Three seconds left for both; no renewal possible yet (their fixed end is as near).
      const soon = new Date(Date.now() + 3000).toISOString()
      for (const s of [renewedLater, idle]) await setRow(s.hash, { expires_at: soon, renew_until: soon })
      const following = await SseClient.open(n.base, renewedLater.cookie)
      const ending = await SseClient.open(n.base, idle.cookie)
      try {
        for (const stream of [following, ending]) {
          assert.equal(stream.status, 200)
          await stream.nextOf('ready')
        }
        // The reader uses the first session elsewhere (another tab) once its fixed end is far.
        await setRow(renewedLater.hash, { renew_until: new Date(Date.now() + 48 * HOUR).toISOString() })
        assert.equal((await me(renewedLater.cookie)).status, 200)
        assert.ok(Date.parse((await row(renewedLater.hash)).expires_at) > Date.now() + 23 * HOUR, 'renewed')

        assert.equal(await ending.ended(), true, 'the idle session ends its stream')
        assert.ok(Date.now() >= Date.parse(soon), 'not before its end')
        const id = await publish(n, DEV_TOKEN, 'after the old end')
        assert.equal(
          (await following.nextOf('notification')).data.notification.id,
          id,
          'the renewed session keeps its stream',
        )
        // Checking again at the old end did not count as a use: the end is the one the use set.
        assert.ok(Date.parse((await row(renewedLater.hash)).expires_at) <= Date.now() + 24 * HOUR)
      } finally {
        following.close()
        ending.close()
      }
    })
  })
}

test('NOTIFY_SESSION_MAX_AGE below NOTIFY_SESSION_TTL is refused', () => {
  const env = { NOTIFY_SESSION_TTL: '168h', NOTIFY_SESSION_MAX_AGE: '24h' }
  assert.throws(
    () => finishConfig(loadConfig(schema, { env }).config),
    /NOTIFY_SESSION_MAX_AGE: at least NOTIFY_SESSION_TTL/,
  )
  const same = finishConfig(
    loadConfig(schema, { env: { NOTIFY_SESSION_TTL: '24h', NOTIFY_SESSION_MAX_AGE: '24h' } }).config,
  )
  assert.equal(same.sessionMaxAge, same.sessionTtl, 'equal: sessions are not renewed')
})
