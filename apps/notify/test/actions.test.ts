import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { freePort, startChild, tempDir } from '@gatehouse/testkit'
import { type CallbackServer, startCallbackServer } from './callback-server.ts'
import { ADMIN, ADMIN_PASSWORD, backends, Client, channel, type Notify, startNotify } from './helpers.ts'
import { castOf } from './roles.ts'

const KEY_A = Buffer.alloc(32, 7).toString('base64')
const KEY_B = Buffer.alloc(32, 9).toString('hex')

async function card(n: Notify, token: string, targets: string[]): Promise<number> {
  const res = await n.client.post('/api/v1/notifications', {
    token,
    body: {
      version: 1,
      title: 'Disk almost full',
      actions: targets.map((t) => ({ type: 'registered', label: `Run ${t}`, target: t })),
    },
  })
  assert.equal(res.status, 201, res.text)
  return res.body.notification.id
}

function invoke(
  n: Pick<Notify, 'client'>,
  cookie: string,
  id: number,
  index: number,
  key: string | null = randomUUID(),
) {
  return n.client.post(`/api/v1/notifications/${id}/actions/${index}`, {
    cookie,
    ...(key === null ? {} : { headers: { 'idempotency-key': key } }),
  })
}

for (const backend of backends) {
  describe(`action targets and invocation (${backend.name})`, () => {
    let n: Notify
    let cb: CallbackServer
    let admin: string
    let viewer: string
    let operator: string
    let chAdmin: string
    let token: string
    let databaseUrl: string
    before(async () => {
      cb = await startCallbackServer()
      databaseUrl = await backend.url()
      n = await startNotify(backend, {
        env: {
          NOTIFY_DATABASE_URL: databaseUrl,
          NOTIFY_ACTION_KEY: KEY_A,
          NOTIFY_ACTION_TIMEOUT: '700ms',
          NOTIFY_ACTION_RESPONSE_LIMIT: '16KiB',
        },
      })
      admin = await n.client.login(ADMIN, ADMIN_PASSWORD)
      ;({ token, viewer, operator, chAdmin } = await castOf(n, admin))
    })
    after(async () => {
      await n.close()
      await cb.close()
    })

    test('target endpoints: anonymous 401, viewer/operator/channel_admin 403, administrator allowed', async () => {
      const body = { url: `${cb.base}/ok`, allow_private: true }
      assert.equal((await n.client.put('/api/v1/action-targets/authz', { body })).status, 401)
      assert.equal((await n.client.get('/api/v1/action-targets')).status, 401)
      assert.equal((await n.client.delete('/api/v1/action-targets/authz')).status, 401)
      for (const cookie of [viewer, operator, chAdmin]) {
        assert.equal(
          (await n.client.put('/api/v1/action-targets/authz', { cookie, body })).body.error.code,
          'admin_required',
        )
        assert.equal((await n.client.get('/api/v1/action-targets', { cookie })).status, 403)
        assert.equal((await n.client.delete('/api/v1/action-targets/authz', { cookie })).status, 403)
      }
      assert.equal((await n.client.put('/api/v1/action-targets/authz', { cookie: admin, body })).status, 201)
      assert.equal((await n.client.put('/api/v1/action-targets/authz', { cookie: admin, body })).status, 200)
      assert.equal((await n.client.delete('/api/v1/action-targets/authz', { cookie: admin })).status, 204)
      assert.equal((await n.client.delete('/api/v1/action-targets/authz', { cookie: admin })).status, 404)
    })

    test('HTTPS is required unless the target allows private destinations; literal private addresses are refused', async () => {
      const put = (url: string, allow_private?: boolean) =>
        n.client.put('/api/v1/action-targets/strict', { cookie: admin, body: { url, allow_private } })
      assert.equal((await put('http://example.org/hook')).body.error.code, 'invalid_action_target')
      assert.equal((await put('ftp://example.org/hook', true)).status, 400)
      assert.equal((await put('https://user:pw@example.org/hook')).status, 400)
      for (const url of [
        'https://127.0.0.1/x',
        'https://10.1.2.3/x',
        'https://192.168.0.1/x',
        'https://169.254.169.254/latest',
        'https://[::1]/x',
        'https://[fe80::1]/x',
        'https://[fd00::1]/x',
        'https://[::ffff:127.0.0.1]/x',
        'https://[::ffff:a9fe:a9fe]/x',
        'https://0.0.0.0/x',
      ]) {
        const res = await put(url)
        assert.equal(res.status, 400, url)
        assert.equal(res.body.error.code, 'invalid_action_target', url)
      }
      assert.equal((await put('https://hooks.example.org/x')).status, 201)
      assert.equal((await put('http://127.0.0.1:9/x', true)).status, 200)
    })

    test('credentials are sealed in the database and never returned', async () => {
      const secret = 'bearer-secret-for-deploy-0001'
      const res = await n.client.put('/api/v1/action-targets/deploy', {
        cookie: admin,
        body: { url: `${cb.base}/ok`, allow_private: true, credential: secret },
      })
      assert.equal(res.status, 201)
      assert.equal(res.body.target.has_credential, true)
      assert.ok(!res.text.includes(secret))
      const list = await n.client.get('/api/v1/action-targets', { cookie: admin })
      assert.ok(!list.text.includes(secret))
      const row = await n.database.db
        .selectFrom('action_targets')
        .select('credential')
        .where('name', '=', 'deploy')
        .executeTakeFirstOrThrow()
      assert.match(row.credential ?? '', /^v1\./)
      assert.ok(!row.credential?.includes(secret))
      const audit = await n.client.get('/api/v1/admin/audit', { cookie: admin })
      assert.ok(
        audit.body.entries.some(
          (e: { action: string; target: string }) => e.action === 'action_target.create' && e.target === 'deploy',
        ),
      )
      assert.ok(!audit.text.includes(secret))
    })

    test('invocation: operator rights, Idempotency-Key required and forwarded, one call per key', async () => {
      const id = await card(n, token, ['deploy'])
      assert.equal((await invoke(n, '', id, 0)).status, 401)
      assert.equal((await invoke(n, viewer, id, 0)).body.error.code, 'role_required')
      const missing = await invoke(n, operator, id, 0, null)
      assert.equal(missing.status, 428)
      assert.equal(missing.body.error.code, 'idempotency_key_required')
      assert.equal((await invoke(n, operator, id, 1)).body.error.code, 'action_not_found')
      const before = cb.received.length
      const key = randomUUID()
      const first = await invoke(n, operator, id, 0, key)
      assert.equal(first.status, 200, first.text)
      assert.equal(first.body.invocation.outcome, 'success')
      assert.equal(first.body.invocation.status_code, 200)
      assert.equal(first.body.replayed, false)
      const call = cb.received.at(-1)!
      assert.equal(call.headers['idempotency-key'], key)
      assert.equal(call.headers.authorization, 'Bearer bearer-secret-for-deploy-0001')
      const sent = JSON.parse(call.body)
      assert.equal(sent.notification.id, id)
      assert.equal(sent.reader.username, 'otto')
      const again = await invoke(n, operator, id, 0, key)
      assert.equal(again.body.replayed, true)
      assert.equal(again.body.invocation.id, first.body.invocation.id)
      assert.equal(cb.received.length, before + 1)
      // channel_admin and administrators may invoke too; a key reused for another action is refused.
      assert.equal((await invoke(n, chAdmin, id, 0)).body.invocation.outcome, 'success')
      assert.equal((await invoke(n, admin, id, 0)).body.invocation.outcome, 'success')
      const other = await card(n, token, ['deploy'])
      assert.equal((await invoke(n, operator, other, 0, key)).body.error.code, 'idempotency_key_reused')
      const history = await n.client.get(`/api/v1/notifications/${id}/actions`, { cookie: viewer })
      assert.equal(history.body.invocations.length, 3)
      // The recorded outcome is immutable.
      await assert.rejects(
        n.database.db
          .updateTable('action_invocations')
          .set({ outcome: 'failure' })
          .where('id', '=', first.body.invocation.id)
          .execute(),
      )
      await assert.rejects(
        n.database.db.deleteFrom('action_invocations').where('id', '=', first.body.invocation.id).execute(),
      )
    })

    test('per-card callback context is sealed apart, never returned, and sent back with the invocation', async () => {
      const context = { host: 'web-3', runbook: 'restart-secret-ctx-42' }
      const res = await n.client.post('/api/v1/notifications', {
        token,
        body: {
          version: 1,
          title: 'web-3 down',
          actions: [
            { type: 'link', label: 'Dashboard', url: 'https://grafana.example.org/d/1' },
            { type: 'registered', label: 'Restart', target: 'deploy', context },
          ],
        },
      })
      assert.equal(res.status, 201, res.text)
      const id = res.body.notification.id
      for (const path of [
        `/api/v1/notifications/${id}`,
        '/api/v1/notifications?limit=5',
        `/api/v1/notifications?q=web-3`,
      ]) {
        const got = await n.client.get(path, { cookie: operator })
        assert.ok(!got.text.includes('restart-secret-ctx-42'), path)
      }
      const stored = await n.database.db
        .selectFrom('notifications')
        .select('content')
        .where('id', '=', id)
        .executeTakeFirstOrThrow()
      assert.ok(!stored.content.includes('restart-secret-ctx-42'))
      const sealed = await n.database.db
        .selectFrom('action_contexts')
        .selectAll()
        .where('notification_id', '=', id)
        .execute()
      assert.equal(sealed.length, 1)
      assert.equal(sealed[0]!.action_index, 1)
      assert.ok(!sealed[0]!.ciphertext.includes('restart'))
      const invoked = await invoke(n, operator, id, 1)
      assert.equal(invoked.body.invocation.outcome, 'success', invoked.text)
      assert.deepEqual(JSON.parse(cb.received.at(-1)!.body).context, context)
      // The link action is not invocable.
      assert.equal((await invoke(n, operator, id, 0)).body.error.code, 'action_not_found')
      const tooBig = await n.client.post('/api/v1/notifications', {
        token,
        body: {
          version: 1,
          title: 'x',
          actions: [{ type: 'registered', label: 'x', target: 'deploy', context: 'x'.repeat(5000) }],
        },
      })
      assert.equal(tooBig.status, 400)
      assert.match(tooBig.body.error.message, /actions\[0\]\.context/)
    })

    test('a private channel: outsiders get 404 for invoking and for the history; anonymous 401', async () => {
      const secret = await channel(n, admin, 'secret-ops', 'private')
      const id = await card(n, secret.token, ['deploy'])
      // vera and otto are not members of the private channel.
      for (const cookie of [viewer, operator]) {
        assert.equal((await invoke(n, cookie, id, 0)).body.error.code, 'notification_not_found')
        assert.equal((await n.client.get(`/api/v1/notifications/${id}/actions`, { cookie })).status, 404)
      }
      assert.equal((await n.client.get(`/api/v1/notifications/${id}/actions`)).status, 401)
      assert.equal((await n.client.get('/api/v1/slash-commands')).status, 401)
      assert.equal((await invoke(n, admin, id, 0)).body.invocation.outcome, 'success')
      const history = await n.client.get(`/api/v1/notifications/${id}/actions`, { cookie: admin })
      assert.equal(history.body.invocations.length, 1)
      assert.equal((await invoke(n, operator, 999999, 0)).status, 404)
    })

    test('a claim left pending by a dead process is finalised as interrupted; one too young is in progress', async () => {
      const id = await card(n, token, ['deploy'])
      const otto = await n.database.db
        .selectFrom('users')
        .select('id')
        .where('username', '=', 'otto')
        .executeTakeFirstOrThrow()
      const claim = (key: string, createdAt: Date) =>
        n.database.db
          .insertInto('action_invocations')
          .values({
            user_id: otto.id,
            username: 'otto',
            idempotency_key: key,
            notification_id: id,
            action_index: 0,
            channel: 'ops',
            target: 'deploy',
            outcome: 'pending',
            status_code: null,
            error: null,
            response_text: null,
            created_at: createdAt.toISOString(),
            finished_at: null,
          })
          .execute()
      const calls = cb.received.length
      // A claim stamped by a node whose clock runs ahead never looks old enough: in progress.
      await claim('stuck-now', new Date(Date.now() + 60_000))
      const busy = await invoke(n, operator, id, 0, 'stuck-now')
      assert.equal(busy.status, 409)
      assert.equal(busy.body.error.code, 'action_in_progress')
      await claim('stuck-old', new Date(Date.now() - 60_000))
      const old = await invoke(n, operator, id, 0, 'stuck-old')
      assert.equal(old.status, 200)
      assert.equal(old.body.replayed, true)
      assert.equal(old.body.invocation.outcome, 'failure')
      assert.match(old.body.invocation.error, /interrupted/)
      assert.equal(cb.received.length, calls)
    })

    test('SSRF: a name resolving to loopback, a redirect, a slow and a huge callback all fail cleanly', async () => {
      const cases: Array<[string, string, boolean, RegExp]> = [
        ['to-localhost', `https://localhost:${cb.port}/ok`, false, /loopback, private or link-local/],
        ['redirects', `${cb.base}/redirect`, true, /redirect/],
        ['slow', `${cb.base}/slow`, true, /within 700 ms/],
        ['huge', `${cb.base}/huge`, true, /exceeds 16384 bytes/],
        ['fails', `${cb.base}/fail`, true, /answered 500/],
      ]
      for (const [name, url, allow_private] of cases) {
        const put = await n.client.put(`/api/v1/action-targets/${name}`, {
          cookie: admin,
          body: { url, allow_private },
        })
        assert.equal(put.status, 201, put.text)
      }
      const id = await card(
        n,
        token,
        cases.map((c) => c[0]),
      )
      const calls = cb.received.length
      for (const [i, [name, , , why]] of cases.entries()) {
        const res = await invoke(n, operator, id, i)
        assert.equal(res.status, 200, res.text)
        assert.equal(res.body.invocation.outcome, 'failure', name)
        assert.match(res.body.invocation.error, why, name)
      }
      const metrics = await (await fetch(`${n.base}/metrics`)).text()
      assert.match(metrics, /notify_action_invocations_total\{outcome="failure"\} [1-9]/)
      assert.match(metrics, /notify_action_invocations_total\{outcome="success"\} [1-9]/)
      // The loopback name was never called; the redirect was not followed.
      assert.ok(!cb.received.slice(calls).some((r) => r.path === '/ok'))
      assert.ok(!cb.received.slice(calls).some((r) => r.path === '/elsewhere'))
    })

    test('DELETE revokes at once: the card keeps its button, which then fails cleanly', async () => {
      await n.client.put('/api/v1/action-targets/short-lived', {
        cookie: admin,
        body: { url: `${cb.base}/ok`, allow_private: true },
      })
      const id = await card(n, token, ['short-lived'])
      assert.equal((await invoke(n, operator, id, 0)).body.invocation.outcome, 'success')
      assert.equal((await n.client.delete('/api/v1/action-targets/short-lived', { cookie: admin })).status, 204)
      const item = await n.client.get(`/api/v1/notifications/${id}`, { cookie: operator })
      assert.equal(item.body.notification.content.actions[0].target, 'short-lived')
      const res = await invoke(n, operator, id, 0)
      assert.equal(res.body.invocation.outcome, 'failure')
      assert.match(res.body.invocation.error, /revoked/)
    })

    test('the committed key is used after the bootstrap variable changes; without any key, 503 and the server runs', async () => {
      await n.close()
      n = await startNotify(backend, { env: { NOTIFY_DATABASE_URL: databaseUrl, NOTIFY_ACTION_KEY: KEY_B } })
      admin = await n.client.login(ADMIN, ADMIN_PASSWORD)
      operator = await n.client.login('otto', 'otto-password-123')
      const id = await card(n, token, ['deploy'])
      const res = await invoke(n, operator, id, 0)
      assert.equal(res.body.invocation.outcome, 'success', res.text)
      assert.equal(cb.received.at(-1)!.headers.authorization, 'Bearer bearer-secret-for-deploy-0001')
      const setting = await n.database.db
        .selectFrom('settings')
        .selectAll()
        .where('name', '=', 'action_encryption_key')
        .execute()
      assert.equal(setting.length, 1)
      assert.equal(Buffer.from(setting[0]!.value, 'base64url').toString('base64'), KEY_A)

      const fresh = await startNotify(backend)
      try {
        const freshAdmin = await fresh.client.login(ADMIN, ADMIN_PASSWORD)
        const put = await fresh.client.put('/api/v1/action-targets/nokey', {
          cookie: freshAdmin,
          body: { url: 'https://hooks.example.org/x' },
        })
        assert.equal(put.status, 503)
        assert.equal(put.body.error.code, 'action_key_unavailable')
        assert.equal((await fresh.client.get('/readyz')).status, 200)
        assert.equal((await fresh.database.db.selectFrom('action_targets').selectAll().execute()).length, 0)
        // A card carrying action context cannot be stored without a key; one without context can.
        const freshChannel = await channel(fresh, freshAdmin, 'nokey')
        const card = {
          version: 1,
          title: 'ctx',
          actions: [{ type: 'registered', label: 'x', target: 't', context: { a: 1 } }],
        }
        const refused = await fresh.client.post('/api/v1/notifications', { token: freshChannel.token, body: card })
        assert.equal(refused.status, 503)
        assert.equal((await fresh.database.db.selectFrom('notifications').selectAll().execute()).length, 0)
        const plain = await fresh.client.post('/api/v1/notifications', {
          token: freshChannel.token,
          body: { version: 1, title: 'no ctx', actions: [{ type: 'registered', label: 'x', target: 't' }] },
        })
        assert.equal(plain.status, 201)
      } finally {
        await fresh.close()
      }
    })

    if (backend.name === 'postgres') {
      test('one call per key under concurrent invocations on two processes', async () => {
        // The second node is a real `notify` process (src/main.ts) on the same database.
        const port = await freePort()
        const logs = tempDir('notify-node2-')
        const child = await startChild({
          name: 'notify (second node)',
          command: process.execPath,
          args: [join(import.meta.dirname, '..', 'src', 'main.ts'), '-listen', `127.0.0.1:${port}`],
          env: {
            PATH: process.env.PATH ?? '',
            NOTIFY_DATABASE_URL: databaseUrl,
            NOTIFY_READER_USERNAME: ADMIN,
            NOTIFY_READER_PASSWORD: ADMIN_PASSWORD,
            NOTIFY_PUBLIC_URL: `http://127.0.0.1:${port}`,
            NOTIFY_BCRYPT_COST: '4',
            NOTIFY_LOG_LEVEL: 'warn',
          },
          logFile: join(logs.path, 'notify.log'),
          probe: async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.ok === true,
        })
        const second = { client: new Client(`http://127.0.0.1:${port}`) }
        try {
          const otherCookie = await second.client.login('otto', 'otto-password-123')
          await n.client.put('/api/v1/action-targets/race', {
            cookie: admin,
            body: { url: `${cb.base}/ok`, allow_private: true },
          })
          const id = await card(n, token, ['race'])
          for (let round = 0; round < 5; round++) {
            const key = randomUUID()
            const calls = cb.received.length
            const results = await Promise.all([
              invoke(n, operator, id, 0, key),
              invoke(second, otherCookie, id, 0, key),
              invoke(n, operator, id, 0, key),
              invoke(second, otherCookie, id, 0, key),
            ])
            for (const r of results) assert.equal(r.status, 200, r.text)
            assert.equal(new Set(results.map((r) => r.body.invocation.id)).size, 1)
            assert.equal(results.filter((r) => !r.body.replayed).length, 1)
            assert.equal(cb.received.length - calls, 1)
          }
        } finally {
          await child.stop()
          logs.remove()
        }
      })
    }
  })
}
