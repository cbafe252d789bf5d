import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { hashToken } from '@gatehouse/kit'
import { tokenCreate } from '../src/cli/tokens.ts'
import { EXPIRED_TOKEN_KEPT_MS, sweepReaderTokens } from '../src/housekeeping.ts'
import { createReaderToken } from '../src/tokens/credentials.ts'
import { ADMIN, ADMIN_PASSWORD, backends, DEV_TOKEN, type Notify, publish, reader, startNotify } from './helpers.ts'
import { SseClient } from './sse.ts'

for (const backend of backends) {
  describe(`reader API tokens (${backend.name})`, () => {
    let n: Notify
    let admin: string
    before(async () => {
      n = await startNotify(backend)
      admin = await n.client.login(ADMIN, ADMIN_PASSWORD)
    })
    after(() => n.close())

    const asToken = (secret: string) => ({ headers: { authorization: `Bearer ${secret}` } })
    const adminId = () =>
      n.database.db.selectFrom('users').select('id').where('username', '=', ADMIN).executeTakeFirstOrThrow()

    test('a reader creates a token; it is stored hashed and reads as that reader with no cookie and no Origin', async () => {
      const created = await n.client.post('/api/v1/me/tokens', { cookie: admin, body: { name: 'inbox script' } })
      assert.equal(created.status, 201, created.text)
      const secret = created.body.secret as string
      assert.match(secret, /^ntr_[A-Za-z0-9_-]{43}$/)
      assert.equal(created.body.token.name, 'inbox script')
      assert.equal(created.body.token.last_used_at, null)
      const rows = await n.database.db.selectFrom('reader_tokens').selectAll().execute()
      const row = rows.find((r) => r.id === created.body.token.id)!
      assert.equal(row.token_hash, hashToken(secret))
      assert.ok(!JSON.stringify(rows).includes(secret), 'the secret itself is not stored')

      const me = await n.client.get('/api/v1/auth/me', asToken(secret))
      assert.equal(me.status, 200, me.text)
      assert.equal(me.body.user.username, ADMIN)
      const inbox = await n.client.get('/api/v1/notifications', asToken(secret))
      assert.equal(inbox.status, 200)
      // A mutation with the token and no Origin passes the browser checks (no cookie is sent).
      const second = await n.client.post('/api/v1/me/tokens', { ...asToken(secret), body: { name: 'second' } })
      assert.equal(second.status, 201, second.text)
      const list = await n.client.get('/api/v1/me/tokens', { cookie: admin })
      assert.deepEqual(
        list.body.tokens.map((t: { name: string }) => t.name),
        ['inbox script', 'second'],
      )
      assert.ok(list.body.tokens[0].last_used_at, 'use is recorded')
      assert.ok(!list.text.includes('ntr_'), 'listing never shows secrets')
    })

    test('revoking stops the token at once; a token is only revocable by its owner', async () => {
      const { body } = await n.client.post('/api/v1/me/tokens', { cookie: admin, body: { name: 'short-lived' } })
      const other = await reader(n, admin, 'mallory')
      const foreign = await n.client.delete(`/api/v1/me/tokens/${body.token.id}`, { cookie: other })
      assert.equal(foreign.status, 404)
      assert.equal(foreign.body.error.code, 'reader_token_not_found')
      assert.equal((await n.client.get('/api/v1/auth/me', asToken(body.secret))).status, 200)
      const revoked = await n.client.delete(`/api/v1/me/tokens/${body.token.id}`, { cookie: admin })
      assert.equal(revoked.status, 204)
      const after = await n.client.get('/api/v1/auth/me', asToken(body.secret))
      assert.equal(after.status, 401)
      assert.equal(after.body.error.code, 'session_required')

      // The owner's own issuing and revoking is audited; the refused foreign revoke is not.
      const audit = await n.database.db
        .selectFrom('admin_audit')
        .selectAll()
        .where('action', 'like', 'reader_token.%')
        .where('details', 'like', `%${body.token.id}%`)
        .orderBy('id')
        .execute()
      assert.deepEqual(
        audit.map((a) => [a.action, a.actor, a.target, JSON.parse(a.details)]),
        [
          ['reader_token.create', ADMIN, ADMIN, { id: body.token.id, name: 'short-lived' }],
          ['reader_token.revoke', ADMIN, ADMIN, { id: body.token.id, name: 'short-lived' }],
        ],
      )
    })

    test("revoking a token ends the streams open with it, as revoking a user's sessions does", async () => {
      const { body } = await n.client.post('/api/v1/me/tokens', { cookie: admin, body: { name: 'tail -f' } })
      const stream = await SseClient.openWithToken(n.base, body.secret)
      try {
        assert.equal(stream.status, 200)
        await stream.nextOf('ready')
        assert.equal((await n.client.delete(`/api/v1/me/tokens/${body.token.id}`, { cookie: admin })).status, 204)
        assert.equal(await stream.ended(), true, 'the stream of a revoked token ends')
      } finally {
        stream.close()
      }
      const again = await SseClient.openWithToken(n.base, body.secret)
      assert.equal(again.status, 401, 'and cannot be opened again')
      again.close()
    })

    test("a stream ends when the token or session that opened it expires, and can't be opened again", async () => {
      // Three seconds: time enough to open the stream on a slow host, short enough to wait for.
      const expiresAt = new Date(Date.now() + 3000).toISOString()
      const { body } = await n.client.post('/api/v1/me/tokens', {
        cookie: admin,
        body: { name: 'until soon', expires_at: expiresAt },
      })
      // A second session whose expiry is brought near, so the administrator's own stays.
      const session = await n.client.login(ADMIN, ADMIN_PASSWORD)
      const sessionHash = hashToken(session.slice(session.indexOf('=') + 1))
      // Its fixed end too: a session in use would otherwise be renewed (auth/sessions.ts).
      await n.database.db
        .updateTable('sessions')
        .set({ expires_at: expiresAt, renew_until: expiresAt })
        .where('token_hash', '=', sessionHash)
        .execute()
      const byToken = await SseClient.openWithToken(n.base, body.secret)
      const bySession = await SseClient.open(n.base, session)
      const lasting = await SseClient.open(n.base, admin)
      try {
        for (const stream of [byToken, bySession, lasting]) {
          assert.equal(stream.status, 200)
          await stream.nextOf('ready')
        }
        assert.equal(await byToken.ended(), true, "the token's stream ends at its expiry")
        assert.equal(await bySession.ended(), true, "the session's stream ends at its expiry")
        assert.ok(Date.now() >= Date.parse(expiresAt), 'not before')
        // The stream of a credential still in force goes on.
        const id = await publish(n, DEV_TOKEN, 'still streaming')
        assert.equal((await lasting.nextOf('notification')).data.notification.id, id)
      } finally {
        for (const stream of [byToken, bySession, lasting]) stream.close()
      }
      for (const again of [await SseClient.openWithToken(n.base, body.secret), await SseClient.open(n.base, session)]) {
        assert.equal(again.status, 401, 'an expired credential opens no stream')
        again.close()
      }
    })

    test('the hourly cleanup removes tokens 30 days after they expired, not before', async () => {
      const { row: gone } = await createReaderToken(n.database.db, (await adminId()).id, 'long expired')
      const { row: recent } = await createReaderToken(n.database.db, (await adminId()).id, 'expired last week')
      const { row: lasting } = await createReaderToken(n.database.db, (await adminId()).id, 'no expiry')
      const daysAgo = (days: number) => new Date(Date.now() - days * 86_400_000).toISOString()
      await n.database.db
        .updateTable('reader_tokens')
        .set({ expires_at: daysAgo(31) })
        .where('id', '=', gone.id)
        .execute()
      await n.database.db
        .updateTable('reader_tokens')
        .set({ expires_at: daysAgo(7) })
        .where('id', '=', recent.id)
        .execute()
      assert.equal(await sweepReaderTokens(n.database.db, Date.now() - EXPIRED_TOKEN_KEPT_MS), 1)
      const left = (await n.database.db.selectFrom('reader_tokens').select('id').execute()).map((r) => r.id)
      assert.ok(!left.includes(gone.id), 'expired 31 days ago: removed')
      assert.ok(left.includes(recent.id) && left.includes(lasting.id), 'expired a week ago, or never: kept')
      assert.equal(await sweepReaderTokens(n.database.db, Date.now() - EXPIRED_TOKEN_KEPT_MS), 0)
    })

    test('a disabled reader, a hook token or garbage as bearer is refused', async () => {
      await reader(n, admin, 'erin')
      const erin = await tokenCreate({ database: n.config.database, user: 'erin', name: 'cli' })
      assert.equal((await n.client.get('/api/v1/auth/me', asToken(erin.secret))).status, 200)
      await n.database.db.updateTable('users').set({ enabled: 0 }).where('username', '=', 'erin').execute()
      assert.equal((await n.client.get('/api/v1/auth/me', asToken(erin.secret))).status, 401)
      await assert.rejects(tokenCreate({ database: n.config.database, user: 'erin', name: 'x' }), /is disabled/)
      await assert.rejects(tokenCreate({ database: n.config.database, user: 'nobody', name: 'x' }), /no user "nobody"/)
      for (const bad of [DEV_TOKEN, `ntr_${'x'.repeat(43)}`, 'ntr_short', `ntr_${'y'.repeat(5000)}`]) {
        const res = await n.client.get('/api/v1/notifications', asToken(bad))
        assert.equal(res.status, 401, bad.slice(0, 20))
      }
    })

    test('a token may expire: expires_at in the request; a past or malformed one is refused', async () => {
      const at = new Date(Date.now() + 3_600_000).toISOString().replace('Z', '+00:00')
      const created = await n.client.post('/api/v1/me/tokens', {
        cookie: admin,
        body: { name: 'for an hour', expires_at: at },
      })
      assert.equal(created.status, 201, created.text)
      assert.equal(created.body.token.expires_at, new Date(Date.parse(at)).toISOString(), 'stored in UTC')
      assert.equal((await n.client.get('/api/v1/auth/me', asToken(created.body.secret))).status, 200)
      const listed = await n.client.get('/api/v1/me/tokens', { cookie: admin })
      assert.equal(
        listed.body.tokens.find((t: { id: string }) => t.id === created.body.token.id).expires_at,
        created.body.token.expires_at,
      )
      const audit = await n.database.db
        .selectFrom('admin_audit')
        .select('details')
        .where('action', '=', 'reader_token.create')
        .where('details', 'like', `%${created.body.token.id}%`)
        .executeTakeFirstOrThrow()
      assert.equal(JSON.parse(audit.details).expires_at, created.body.token.expires_at)

      await n.database.db
        .updateTable('reader_tokens')
        .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
        .where('id', '=', created.body.token.id)
        .execute()
      const expired = await n.client.get('/api/v1/auth/me', asToken(created.body.secret))
      assert.equal(expired.status, 401, 'past its expiry a token is refused like a revoked one')

      const before = (await n.database.db.selectFrom('reader_tokens').select('id').execute()).length
      for (const [expires_at, message] of [
        ['2020-01-01T00:00:00Z', 'body.expires_at must be in the future'],
        ['next week', 'body.expires_at must be a valid date-time'],
      ]) {
        const r = await n.client.post('/api/v1/me/tokens', { cookie: admin, body: { name: 'x', expires_at } })
        assert.equal(r.status, 400, expires_at)
        assert.equal(r.body.error.message, message)
      }
      assert.equal((await n.database.db.selectFrom('reader_tokens').select('id').execute()).length, before)
    })

    test('a token name is required and bounded, with a message saying so', async () => {
      const empty = await n.client.post('/api/v1/me/tokens', { cookie: admin, body: { name: '' } })
      assert.equal(empty.status, 400)
      assert.equal(empty.body.error.message, 'body.name must not be empty')
      const missing = await n.client.post('/api/v1/me/tokens', { cookie: admin, body: {} })
      assert.equal(missing.body.error.message, 'body.name is required')
    })
  })
}
