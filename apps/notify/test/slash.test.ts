import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { type CallbackServer, startCallbackServer } from './callback-server.ts'
import { ADMIN, ADMIN_PASSWORD, backends, type Notify, startNotify } from './helpers.ts'
import { castOf } from './roles.ts'

const KEY = Buffer.alloc(32, 3).toString('base64url')
const TOKEN_A = 'mm-slash-token-aaaaaaaaaaaaa'
const TOKEN_B = 'mm-slash-token-bbbbbbbbbbbbb'

for (const backend of backends) {
  describe(`slash-command import and invocation (${backend.name})`, () => {
    let n: Notify
    let cb: CallbackServer
    let admin: string
    let viewer: string
    let operator: string
    let chAdmin: string
    const defs = () => [
      {
        trigger: 'deploy',
        url: `${cb.base}/ok`,
        token: TOKEN_A,
        method: 'P',
        description: 'Deploy a service',
        allow_private: true,
      },
      { trigger: 'status', url: `${cb.base}/ok`, token: TOKEN_B, allow_private: true },
    ]
    const importing = (body: unknown, cookie = admin) =>
      n.client.post('/api/v1/admin/import/slash-commands', { cookie, body })
    const run = (cookie: string, body: unknown, key: string | null = randomUUID(), ch = 'ops') =>
      n.client.post(`/api/v1/channels/${ch}/commands`, {
        cookie,
        body,
        ...(key === null ? {} : { headers: { 'idempotency-key': key } }),
      })

    before(async () => {
      cb = await startCallbackServer()
      n = await startNotify(backend, { env: { NOTIFY_ACTION_KEY: KEY } })
      admin = await n.client.login(ADMIN, ADMIN_PASSWORD)
      ;({ viewer, operator, chAdmin } = await castOf(n, admin))
    })
    after(async () => {
      await n.close()
      await cb.close()
    })

    test('import authorization: anonymous 401, viewer/operator/channel_admin 403', async () => {
      const body = { dry_run: true, commands: defs() }
      assert.equal((await n.client.post('/api/v1/admin/import/slash-commands', { body })).status, 401)
      for (const cookie of [viewer, operator, chAdmin]) assert.equal((await importing(body, cookie)).status, 403)
    })

    test('dry run validates and counts, writes and commits nothing', async () => {
      const res = await importing({ dry_run: true, commands: defs() })
      assert.equal(res.status, 200, res.text)
      assert.deepEqual(res.body, { dry_run: true, created: 2, existing: 0 })
      assert.equal((await n.database.db.selectFrom('action_targets').selectAll().execute()).length, 0)
      assert.equal(
        (await n.database.db.selectFrom('settings').selectAll().where('name', '=', 'action_encryption_key').execute())
          .length,
        0,
      )
    })

    test('strict: unknown fields, duplicate triggers, a leading slash and plain http are refused', async () => {
      const bad = [
        { dry_run: false, commands: [{ ...defs()[0], team: 'x' }] },
        { dry_run: false, commands: defs(), extra: true },
        { commands: defs() },
        { dry_run: false, commands: [defs()[0], defs()[0]] },
        { dry_run: false, commands: [{ ...defs()[0], trigger: '/deploy' }] },
        { dry_run: false, commands: [{ ...defs()[0], method: 'G' }] },
        { dry_run: false, commands: [{ ...defs()[0], allow_private: false }] },
      ]
      for (const body of bad) {
        const res = await importing(body)
        assert.equal(res.status, 400, JSON.stringify(body))
        assert.ok(!res.text.includes(TOKEN_A))
      }
      assert.equal((await n.database.db.selectFrom('action_targets').selectAll().execute()).length, 0)
    })

    test('import is atomic and idempotent, seals tokens and never echoes them', async () => {
      const first = await importing({ dry_run: false, commands: defs() })
      assert.deepEqual(first.body, { dry_run: false, created: 2, existing: 0 })
      assert.ok(!first.text.includes(TOKEN_A) && !first.text.includes(cb.base))
      const again = await importing({ dry_run: false, commands: defs() })
      assert.deepEqual(again.body, { dry_run: false, created: 0, existing: 2 })
      const rows = await n.database.db.selectFrom('action_targets').selectAll().execute()
      assert.equal(rows.length, 2)
      for (const r of rows) assert.ok(r.credential?.startsWith('v1.') && !r.credential.includes('mm-slash'))
      assert.equal(
        (await n.database.db.selectFrom('settings').selectAll().where('name', '=', 'action_encryption_key').execute())
          .length,
        1,
      )
      // Remapping a trigger (another token) fails closed, and the new command in the same batch is not written.
      const remap = await importing({
        dry_run: false,
        commands: [
          { trigger: 'fresh', url: `${cb.base}/ok`, token: 'x', allow_private: true },
          { ...defs()[0], token: 'other-token' },
        ],
      })
      assert.equal(remap.status, 409)
      assert.equal(remap.body.error.code, 'import_rejected')
      assert.equal((await n.database.db.selectFrom('action_targets').selectAll().execute()).length, 2)
      // A name taken by an ordinary action target is not overwritten.
      await n.client.put('/api/v1/action-targets/slash-taken', {
        cookie: admin,
        body: { url: `${cb.base}/ok`, allow_private: true },
      })
      const taken = await importing({
        dry_run: false,
        commands: [{ trigger: 'taken', url: `${cb.base}/ok`, token: 't', allow_private: true }],
      })
      assert.equal(taken.status, 409)
      const targets = await n.client.get('/api/v1/action-targets', { cookie: admin })
      assert.ok(!targets.text.includes(TOKEN_A))
      const list = await n.client.get('/api/v1/slash-commands', { cookie: viewer })
      assert.deepEqual(list.body.commands, [
        { trigger: 'deploy', description: 'Deploy a service' },
        { trigger: 'status', description: '' },
      ])
    })

    test('a reader with operator rights runs a command with arguments; the reply text is kept', async () => {
      assert.equal((await n.client.post('/api/v1/channels/ops/commands', { body: { trigger: 'deploy' } })).status, 401)
      assert.equal((await run(viewer, { trigger: 'deploy', text: 'web' })).body.error.code, 'role_required')
      assert.equal((await run(operator, { trigger: 'deploy' }, null)).status, 428)
      assert.equal((await run(operator, { trigger: 'nope' })).status, 404)
      assert.equal((await run(operator, { trigger: 'deploy' }, randomUUID(), 'missing')).status, 404)
      const key = randomUUID()
      const calls = cb.received.length
      const res = await run(operator, { trigger: 'deploy', text: 'web --canary' }, key)
      assert.equal(res.status, 200, res.text)
      assert.equal(res.body.invocation.outcome, 'success')
      assert.equal(res.body.invocation.response_text, 'done')
      assert.equal(res.body.invocation.channel, 'ops')
      const call = cb.received.at(-1)!
      assert.equal(call.headers['content-type'], 'application/x-www-form-urlencoded')
      assert.equal(call.headers.authorization, `Token ${TOKEN_A}`)
      assert.equal(call.headers['idempotency-key'], key)
      const form = new URLSearchParams(call.body)
      assert.equal(form.get('command'), '/deploy')
      assert.equal(form.get('text'), 'web --canary')
      assert.equal(form.get('token'), TOKEN_A)
      assert.equal(form.get('user_name'), 'otto')
      assert.equal(form.get('channel_name'), 'ops')
      const replay = await run(operator, { trigger: 'deploy', text: 'web --canary' }, key)
      assert.equal(replay.body.replayed, true)
      assert.equal(replay.body.invocation.id, res.body.invocation.id)
      assert.equal(cb.received.length, calls + 1)
      assert.equal((await run(operator, { trigger: 'status' }, key)).body.error.code, 'idempotency_key_reused')
      assert.equal((await run(chAdmin, { trigger: 'status' })).body.invocation.outcome, 'success')
    })

    test('without key material import answers 503 and the server runs', async () => {
      const bare = await startNotify(backend)
      try {
        const cookie = await bare.client.login(ADMIN, ADMIN_PASSWORD)
        for (const dry_run of [true, false]) {
          const res = await bare.client.post('/api/v1/admin/import/slash-commands', {
            cookie,
            body: { dry_run, commands: defs() },
          })
          assert.equal(res.status, 503)
          assert.equal(res.body.error.code, 'action_key_unavailable')
        }
        assert.equal((await bare.client.get('/readyz')).status, 200)
      } finally {
        await bare.close()
      }
    })
  })
}
