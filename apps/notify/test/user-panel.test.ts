import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { ADMIN, ADMIN_PASSWORD, backends, type Notify, reader, startNotify } from './helpers.ts'
import { castOf } from './roles.ts'
import { SseClient } from './sse.ts'

for (const backend of backends) {
  describe(`user panel and audit (${backend.name})`, () => {
    let n: Notify
    let admin: string
    let viewer: string
    let operator: string
    let chAdmin: string
    before(async () => {
      n = await startNotify(backend)
      admin = await n.client.login(ADMIN, ADMIN_PASSWORD)
      ;({ viewer, operator, chAdmin } = await castOf(n, admin))
    })
    after(() => n.close())

    test('every panel endpoint: anonymous 401, viewer/operator/channel_admin 403', async () => {
      const calls: Array<[string, string, unknown]> = [
        ['PATCH', '/api/v1/users/vera', { admin: true }],
        ['POST', '/api/v1/users/vera/revoke-sessions', undefined],
        ['POST', '/api/v1/users/vera/password', { password: 'another-password-1' }],
        ['GET', '/api/v1/admin/audit', undefined],
      ]
      for (const [method, path, body] of calls) {
        assert.equal((await n.client.req(method, path, body === undefined ? {} : { body })).status, 401, path)
        for (const cookie of [viewer, operator, chAdmin]) {
          const res = await n.client.req(method, path, { cookie, ...(body === undefined ? {} : { body }) })
          assert.equal(res.status, 403, `${path} ${res.text}`)
          assert.equal(res.body.error.code, 'admin_required')
        }
      }
      assert.equal(
        (await n.client.req('PATCH', '/api/v1/users/nobody', { cookie: admin, body: { admin: true } })).status,
        404,
      )
      assert.equal((await n.client.req('PATCH', '/api/v1/users/vera', { cookie: admin, body: {} })).status, 400)
      assert.equal(
        (await n.client.req('PATCH', '/api/v1/users/vera', { cookie: admin, body: { root: true } })).status,
        400,
      )
    })

    test('promote and demote take effect on the next request', async () => {
      const up = await n.client.req('PATCH', '/api/v1/users/otto', { cookie: admin, body: { admin: true } })
      assert.equal(up.status, 200, up.text)
      assert.equal(up.body.user.admin, true)
      assert.equal((await n.client.get('/api/v1/users', { cookie: operator })).status, 200)
      await n.client.req('PATCH', '/api/v1/users/otto', { cookie: admin, body: { admin: false } })
      assert.equal((await n.client.get('/api/v1/users', { cookie: operator })).status, 403)
    })

    test('disable ends access at once; enable restores sign-in; an administrator cannot disable themself', async () => {
      const cookie = await reader(n, admin, 'dora')
      assert.equal(
        (await n.client.req('PATCH', '/api/v1/users/dora', { cookie: admin, body: { enabled: false } })).status,
        200,
      )
      assert.equal((await n.client.get('/api/v1/auth/me', { cookie })).status, 401)
      const login = await n.client.post('/api/v1/auth/login', {
        body: { username: 'dora', password: 'dora-password-123' },
      })
      assert.equal(login.status, 401)
      await n.client.req('PATCH', '/api/v1/users/dora', { cookie: admin, body: { enabled: true } })
      await n.client.login('dora', 'dora-password-123')
      const self = await n.client.req('PATCH', `/api/v1/users/${ADMIN}`, { cookie: admin, body: { enabled: false } })
      assert.equal(self.status, 409)
      assert.equal(self.body.error.code, 'self_change_refused')
    })

    test('open streams follow the panel: a promoted reader sees private channels, a disabled one loses the stream', async () => {
      const cookie = await reader(n, admin, 'sven')
      const stream = await SseClient.open(n.base, cookie)
      try {
        await stream.nextOf('ready')
        await n.client.req('PATCH', '/api/v1/users/sven', { cookie: admin, body: { admin: true } })
        const access = await stream.nextOf('membership')
        assert.deepEqual(access.data, { change: 'access', admin: true, enabled: true })
        const ch = await n.client.post('/api/v1/channels', {
          cookie: admin,
          body: { name: 'hidden-2', visibility: 'private' },
        })
        assert.equal(ch.status, 201)
        assert.equal((await stream.nextOf('channel')).data.channel.name, 'hidden-2')
        await n.client.req('PATCH', '/api/v1/users/sven', { cookie: admin, body: { enabled: false } })
        assert.equal(await stream.ended(), true)
      } finally {
        stream.close()
      }
    })

    test('revoking sessions or resetting the password ends the open streams those sessions opened', async () => {
      const cookie = await reader(n, admin, 'rita')
      const stream = await SseClient.open(n.base, cookie)
      try {
        await stream.nextOf('ready')
        const r = await n.client.post('/api/v1/users/rita/revoke-sessions', { cookie: admin })
        assert.equal(r.status, 200)
        assert.ok(r.body.revoked >= 1)
        assert.equal(await stream.ended(), true, 'the stream of a revoked session ends')
        assert.equal((await n.client.get('/api/v1/auth/me', { cookie })).status, 401)
      } finally {
        stream.close()
      }
      const again = await n.client.login('rita', 'rita-password-123')
      const second = await SseClient.open(n.base, again)
      try {
        await second.nextOf('ready')
        const reset = await n.client.post('/api/v1/users/rita/password', {
          cookie: admin,
          body: { password: 'rita-new-password-456' },
        })
        assert.equal(reset.status, 204)
        assert.equal(await second.ended(), true, 'a password reset ends the streams too')
      } finally {
        second.close()
      }
    })

    test('the last enabled human administrator cannot be demoted or disabled', async () => {
      const demote = await n.client.req('PATCH', `/api/v1/users/${ADMIN}`, { cookie: admin, body: { admin: false } })
      assert.equal(demote.status, 409)
      assert.equal(demote.body.error.code, 'last_admin')
      // A system administrator does not count as a human one.
      await n.client.post('/api/v1/users', { cookie: admin, body: { username: 'robot', admin: true, kind: 'system' } })
      assert.equal(
        (await n.client.req('PATCH', `/api/v1/users/${ADMIN}`, { cookie: admin, body: { admin: false } })).body.error
          .code,
        'last_admin',
      )
    })

    test('two concurrent demotions of the last two administrators: exactly one wins', async () => {
      for (let round = 0; round < 4; round++) {
        const a = `twin-a${round}`
        const b = `twin-b${round}`
        const ca = await reader(n, admin, a, true)
        const cb = await reader(n, admin, b, true)
        // Leave only a and b as enabled human administrators.
        await n.database.db
          .updateTable('users')
          .set({ is_admin: 0 })
          .where('kind', '=', 'human')
          .where('username', 'not in', [a, b])
          .execute()
        const [x, y] = await Promise.all([
          n.client.req('PATCH', `/api/v1/users/${b}`, {
            cookie: ca,
            body: round % 2 ? { enabled: false } : { admin: false },
          }),
          n.client.req('PATCH', `/api/v1/users/${a}`, {
            cookie: cb,
            body: round % 2 ? { enabled: false } : { admin: false },
          }),
        ])
        const statuses = [x.status, y.status].sort()
        // The loser is refused as the last admin, or, when the winner went first, as no longer an
        // administrator (403) or no longer signed in (401: disabling ends the sessions).
        assert.equal(statuses[0], 200, `${x.text} ${y.text}`)
        assert.ok([401, 403, 409].includes(statuses[1]!), `${x.text} ${y.text}`)
        const admins = await n.database.db
          .selectFrom('users')
          .select('username')
          .where('is_admin', '=', 1)
          .where('enabled', '=', 1)
          .where('kind', '=', 'human')
          .execute()
        assert.equal(admins.length, 1)
        // Restore the bootstrap administrator for the next round.
        await n.database.db.updateTable('users').set({ is_admin: 1 }).where('username', '=', ADMIN).execute()
      }
    })

    test('the list counts the sessions and reader tokens in force, which the panel names in its questions', async () => {
      const count = async (username: string) => {
        const users = (await n.client.get('/api/v1/users', { cookie: admin })).body.users
        const u = users.find((x: { username: string }) => x.username === username)
        return { sessions: u.sessions, reader_tokens: u.reader_tokens }
      }
      const first = await reader(n, admin, 'cora')
      await n.client.login('cora', 'cora-password-123')
      const token = await n.client.post('/api/v1/me/tokens', { cookie: first, body: { name: 'backup script' } })
      assert.equal(token.status, 201, token.text)
      // An expired session and an expired token are not in force: not counted.
      const cora = await n.database.db
        .selectFrom('users')
        .select('id')
        .where('username', '=', 'cora')
        .executeTakeFirstOrThrow()
      const past = new Date(Date.now() - 60_000).toISOString()
      await n.database.db
        .insertInto('sessions')
        .values({
          token_hash: `expired-${randomUUID()}`,
          user_id: cora.id,
          created_at: past,
          expires_at: past,
          renew_until: past,
        })
        .execute()
      await n.database.db
        .insertInto('reader_tokens')
        .values({
          id: randomUUID(),
          user_id: cora.id,
          name: 'old script',
          token_hash: `expired-${randomUUID()}`,
          created_at: past,
          last_used_at: null,
          expires_at: past,
        })
        .execute()
      assert.deepEqual(await count('cora'), { sessions: 2, reader_tokens: 1 })
      const revoked = await n.client.post('/api/v1/users/cora/revoke-sessions', { cookie: admin })
      assert.equal(revoked.body.revoked, 2, 'the sessions in force; the expired one goes uncounted')
      assert.deepEqual(await count('cora'), { sessions: 0, reader_tokens: 1 })
      const left = await n.database.db
        .selectFrom('sessions')
        .select('token_hash')
        .where('user_id', '=', cora.id)
        .execute()
      assert.deepEqual(left, [], 'the expired session is deleted too')
      const never = await n.client.post('/api/v1/users', {
        cookie: admin,
        body: { username: 'nell', password: 'nell-password-123' },
      })
      assert.equal(never.status, 201)
      assert.deepEqual(await count('nell'), { sessions: 0, reader_tokens: 0 })
    })

    test('revoke sessions and reset a local password', async () => {
      const cookie = await reader(n, admin, 'pia')
      const revoked = await n.client.post('/api/v1/users/pia/revoke-sessions', { cookie: admin })
      assert.equal(revoked.body.revoked, 1)
      assert.equal((await n.client.get('/api/v1/auth/me', { cookie })).status, 401)
      const again = await n.client.login('pia', 'pia-password-123')
      const reset = await n.client.post('/api/v1/users/pia/password', {
        cookie: admin,
        body: { password: 'a-brand-new-password' },
      })
      assert.equal(reset.status, 204)
      assert.equal((await n.client.get('/api/v1/auth/me', { cookie: again })).status, 401)
      assert.equal(
        (await n.client.post('/api/v1/auth/login', { body: { username: 'pia', password: 'pia-password-123' } })).status,
        401,
      )
      await n.client.login('pia', 'a-brand-new-password')
      const short = await n.client.post('/api/v1/users/pia/password', { cookie: admin, body: { password: 'short' } })
      assert.equal(short.status, 400)
      await n.database.db
        .insertInto('users')
        .values({
          id: randomUUID(),
          username: 'idp-user',
          kind: 'human',
          auth_type: 'oidc',
          oidc_subject: 'sub-1',
          password_hash: null,
          is_admin: 0,
          enabled: 1,
          created_at: new Date().toISOString(),
        })
        .execute()
      const oidc = await n.client.post('/api/v1/users/idp-user/password', {
        cookie: admin,
        body: { password: 'a-brand-new-password' },
      })
      assert.equal(oidc.body.error.code, 'password_not_local')
    })

    test('every change is in the audit log, newest first, immutable, never with a secret', async () => {
      const hook = await n.client.post('/api/v1/webhooks', { cookie: admin, body: { channel: 'ops' } })
      await n.client.post(`/api/v1/webhooks/${hook.body.webhook.id}/revoke`, { cookie: admin })
      const res = await n.client.get('/api/v1/admin/audit?limit=200', { cookie: admin })
      assert.equal(res.status, 200)
      const actions = res.body.entries.map((e: { action: string; target: string }) => `${e.action} ${e.target}`)
      for (const expected of [
        'user.create vera',
        'member.set ops/vera',
        'channel.create ops',
        'user.update otto',
        'user.update dora',
        'user.revoke_sessions pia',
        'user.reset_password pia',
        `webhook.create ${hook.body.webhook.id}`,
        `webhook.revoke ${hook.body.webhook.id}`,
      ]) {
        assert.ok(actions.includes(expected), expected)
      }
      const ids = res.body.entries.map((e: { id: number }) => e.id)
      assert.deepEqual(
        ids,
        [...ids].sort((a: number, b: number) => b - a),
      )
      assert.ok(!res.text.includes('a-brand-new-password'))
      assert.ok(!res.text.includes(hook.body.webhook.token))
      const page = await n.client.get('/api/v1/admin/audit?limit=2', { cookie: admin })
      const older = await n.client.get(`/api/v1/admin/audit?limit=2&before=${page.body.next_before}`, { cookie: admin })
      assert.ok(older.body.entries[0].id < page.body.entries[1].id + 1)
      await assert.rejects(n.database.db.updateTable('admin_audit').set({ actor: 'x' }).execute())
      await assert.rejects(n.database.db.deleteFrom('admin_audit').execute())
    })
  })
}
