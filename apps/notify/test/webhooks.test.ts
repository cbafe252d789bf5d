import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { openNotifyDatabase } from '../src/db/open.ts'
import { ADMIN, ADMIN_PASSWORD, backends, channel, count, type Notify, startNotify } from './helpers.ts'

for (const backend of backends) {
  describe(`webhooks (${backend.name})`, () => {
    let n: Notify
    let admin: string
    before(async () => {
      n = await startNotify(backend)
      admin = await n.client.login(ADMIN, ADMIN_PASSWORD)
      await channel(n, admin, 'alpha')
      await channel(n, admin, 'beta')
      await channel(n, admin, 'private-one', 'private')
    })
    after(() => n.close())

    test('create returns the secret path once; the list shows metadata only', async () => {
      const created = await n.client.post('/api/v1/webhooks', {
        cookie: admin,
        body: { channel: 'alpha', channel_locked: true },
      })
      assert.equal(created.status, 201)
      const hook = created.body.webhook
      assert.match(hook.path, /^\/hooks\/[A-Za-z0-9_-]{43}$/)
      assert.equal(hook.path, `/hooks/${hook.token}`)
      assert.equal(hook.channel_locked, true)
      const list = await n.client.get('/api/v1/webhooks', { cookie: admin })
      assert.ok(!list.text.includes(hook.token))
      const listed = list.body.webhooks.find((w: { id: string }) => w.id === hook.id)
      assert.deepEqual(Object.keys(listed).sort(), [
        'active',
        'channel',
        'channel_locked',
        'created_at',
        'id',
        'kind',
        'revoked_at',
      ])
      const unknown = await n.client.post('/api/v1/webhooks', { cookie: admin, body: { channel: 'nope' } })
      assert.equal(unknown.status, 404)
      const strict = await n.client.post('/api/v1/webhooks', { cookie: admin, body: { channel: 'alpha', token: 'x' } })
      assert.equal(strict.status, 400)
    })

    test('new URL: same channel and policy, both URLs active until revoked', async () => {
      const first = (
        await n.client.post('/api/v1/webhooks', { cookie: admin, body: { channel: 'beta', channel_locked: true } })
      ).body.webhook
      const second = (await n.client.post(`/api/v1/webhooks/${first.id}/new-url`, { cookie: admin })).body.webhook
      assert.notEqual(second.id, first.id)
      assert.notEqual(second.token, first.token)
      assert.equal(second.channel, 'beta')
      assert.equal(second.channel_locked, true)
      for (const h of [first, second]) {
        assert.equal((await n.client.post(h.path, { body: { text: 'x', channel: 'alpha' } })).status, 200)
      }
      await n.client.post(`/api/v1/webhooks/${first.id}/revoke`, { cookie: admin })
      assert.equal((await n.client.post(first.path, { body: { text: 'x' } })).status, 401)
      assert.equal((await n.client.post(second.path, { body: { text: 'x' } })).status, 200)
      const again = await n.client.post(`/api/v1/webhooks/${first.id}/new-url`, { cookie: admin })
      assert.equal(again.status, 409)
      assert.equal((await n.client.post('/api/v1/webhooks/wh_missing/revoke', { cookie: admin })).status, 404)
    })

    test('changes committed through another database connection apply to the next delivery', async () => {
      const hook = (await n.client.post('/api/v1/webhooks', { cookie: admin, body: { channel: 'alpha' } })).body.webhook
      const stored = async (text: string) =>
        (await n.database.db.selectFrom('notifications').select('channel').where('body', '=', text).executeTakeFirst())
          ?.channel
      assert.equal((await n.client.post(hook.path, { body: { text: 'before gamma', channel: 'gamma' } })).status, 200)
      assert.equal(await stored('before gamma'), 'alpha')
      // Another connection to the same database, as a second node or the database shell would be.
      const other = await openNotifyDatabase(n.config.database)
      try {
        await other.db
          .insertInto('channels')
          .values({
            name: 'gamma',
            display_name: 'gamma',
            description: '',
            accent_color: '#000000',
            visibility: 'public',
            created_at: new Date().toISOString(),
          })
          .execute()
        assert.equal((await n.client.post(hook.path, { body: { text: 'to gamma', channel: 'gamma' } })).status, 200)
        assert.equal(await stored('to gamma'), 'gamma')
        // A channel made private, then deleted, elsewhere is no destination from the next delivery on.
        await other.db.updateTable('channels').set({ visibility: 'private' }).where('name', '=', 'gamma').execute()
        assert.equal(
          (await n.client.post(hook.path, { body: { text: 'gamma private', channel: 'gamma' } })).status,
          200,
        )
        assert.equal(await stored('gamma private'), 'alpha')
        await other.db.updateTable('channels').set({ visibility: 'public' }).where('name', '=', 'gamma').execute()
        assert.equal((await n.client.post(hook.path, { body: { text: 'gamma public', channel: 'gamma' } })).status, 200)
        assert.equal(await stored('gamma public'), 'gamma')
        await other.db
          .updateTable('webhooks')
          .set({ revoked_at: new Date().toISOString() })
          .where('id', '=', hook.id)
          .execute()
        const refused = await n.client.post(hook.path, { body: { text: 'after revoke' } })
        assert.equal(refused.status, 401)
        assert.equal(refused.body.error.code, 'hook_token_invalid')
        await other.db.updateTable('webhooks').set({ revoked_at: null }).where('id', '=', hook.id).execute()
        assert.equal((await n.client.post(hook.path, { body: { text: 'reinstated' } })).status, 200)
        // The same through this server's own API.
        assert.equal((await n.client.post(hook.path, { body: { text: 'before delta', channel: 'delta' } })).status, 200)
        assert.equal(await stored('before delta'), 'alpha')
        await channel(n, admin, 'delta')
        assert.equal((await n.client.post(hook.path, { body: { text: 'to delta', channel: 'delta' } })).status, 200)
        assert.equal(await stored('to delta'), 'delta')
      } finally {
        await other.close()
      }
    })

    test('import: strict, atomic, idempotent; never echoes hook ids', async () => {
      const ids = ['mattermost-hook-aaaaaaaaaaaa', 'mattermost-hook-bbbbbbbbbbbb']
      const body = {
        dry_run: false,
        webhooks: [
          { id: ids[0], channel: 'alpha' },
          { id: ids[1], channel: 'beta', channel_locked: true },
        ],
      }
      const dry = await n.client.post('/api/v1/admin/import/webhooks', {
        cookie: admin,
        body: { ...body, dry_run: true },
      })
      assert.deepEqual(dry.body, { dry_run: true, created: 2, existing: 0 })
      assert.equal((await n.client.post(`/hooks/${ids[0]}`, { body: { text: 'x' } })).status, 401)
      const first = await n.client.post('/api/v1/admin/import/webhooks', { cookie: admin, body })
      assert.equal(first.status, 200)
      assert.deepEqual(first.body, { dry_run: false, created: 2, existing: 0 })
      const second = await n.client.post('/api/v1/admin/import/webhooks', { cookie: admin, body })
      assert.deepEqual(second.body, { dry_run: false, created: 0, existing: 2 })
      const before = await count(n)
      const delivered = await n.client.post(`/hooks/${ids[0]}`, { body: { text: 'imported works', channel: 'beta' } })
      assert.equal(delivered.status, 200)
      const locked = await n.client.post(`/hooks/${ids[1]}`, { body: { text: 'locked', channel: 'alpha' } })
      assert.equal(locked.status, 200)
      assert.equal(await count(n), before + 2)
      const list = await n.client.get('/api/v1/webhooks', { cookie: admin })
      assert.ok(!list.text.includes(ids[0]!) && !first.text.includes(ids[0]!))

      const hooksBefore = (await n.client.get('/api/v1/webhooks', { cookie: admin })).body.webhooks.length
      const failing: Array<[unknown, number]> = [
        // a new id next to a remapped one: nothing at all is written
        [
          {
            dry_run: false,
            webhooks: [
              { id: 'fresh-hook-cccccccccccc', channel: 'alpha' },
              { id: ids[0], channel: 'beta' },
            ],
          },
          409,
        ],
        [
          {
            dry_run: false,
            webhooks: [
              { id: 'fresh-hook-cccccccccccc', channel: 'alpha' },
              { id: ids[1], channel: 'beta' },
            ],
          },
          409,
        ],
        [{ dry_run: false, webhooks: [{ id: 'fresh-hook-cccccccccccc', channel: 'nope' }] }, 400],
        [
          {
            dry_run: false,
            webhooks: [
              { id: 'dup-hook-dddddddddddd', channel: 'alpha' },
              { id: 'dup-hook-dddddddddddd', channel: 'alpha' },
            ],
          },
          400,
        ],
        [{ dry_run: false, webhooks: [{ id: 'fresh-hook-cccccccccccc', channel: 'alpha', secret: 1 }] }, 400],
        [{ webhooks: [] }, 400],
        [{ dry_run: false, webhooks: [{ id: 'short', channel: 'alpha' }] }, 400],
      ]
      for (const [b, status] of failing) {
        const res = await n.client.post('/api/v1/admin/import/webhooks', { cookie: admin, body: b })
        assert.equal(res.status, status, JSON.stringify(b))
        assert.ok(
          !res.text.includes('cccccccc') && !res.text.includes(ids[0]!) && !res.text.includes('dddddddd'),
          res.text,
        )
      }
      assert.equal((await n.client.get('/api/v1/webhooks', { cookie: admin })).body.webhooks.length, hooksBefore)
      assert.equal((await n.client.post('/hooks/fresh-hook-cccccccccccc', { body: { text: 'x' } })).status, 401)
    })
  })
}
