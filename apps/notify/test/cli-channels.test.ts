/**
 * `notify channel list|create` and `notify hook list|create|new-url|revoke` as an operator runs them
 * (child processes, on the database of a running server, both backends): a channel and a
 * hook made on the command line take deliveries on the server at once, into that channel; a
 * list never shows a token; a revocation refuses the next delivery as the API's does; bad
 * input is one line, exit 2 (written wrong) or 1 (refused), and writes nothing; the same
 * input the command refuses, the API refuses too.
 */
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { loadedPackages, tempDir } from '@gatehouse/testkit'
import { cli, MAIN, oneLine } from './cli-run.ts'
import { ADMIN, ADMIN_PASSWORD, backends, type Notify, startNotify } from './helpers.ts'

const scratch = tempDir('notify-cli-channels-')
after(() => scratch.remove())

interface Audit {
  actor: string
  action: string
  target: string
  details: Record<string, unknown>
}

interface Hook {
  id: string
  channel: string
  channel_locked: boolean
  kind: string
  active: boolean
  created_at: string
  revoked_at: string | null
}

for (const backend of backends) {
  describe(`channel and hook commands on a running server's database (${backend.name})`, () => {
    let n: Notify
    let cookie: string
    let db: string[]
    // As serve has it: hook URLs are printed on it.
    let env: Record<string, string>
    before(async () => {
      n = await startNotify(backend)
      cookie = await n.client.login(ADMIN, ADMIN_PASSWORD)
      db = ['--database', n.config.database]
      env = { NOTIFY_PUBLIC_URL: n.base }
    })
    after(() => n.close())

    const run = async (args: string[]) => {
      const r = await cli([...args, ...db], env)
      assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`)
      assert.equal(r.stderr, '')
      return r.stdout
    }
    const json = async <T>(args: string[]): Promise<T> => JSON.parse(await run([...args, '--json'])) as T
    const audit = () => json<Audit[]>(['audit', 'list'])
    /** The channel a delivered text was stored in (undefined: not stored). */
    const storedIn = async (text: string) =>
      (await n.database.db.selectFrom('notifications').select('channel').where('body', '=', text).executeTakeFirst())
        ?.channel

    test('channel create, then hook create: a POST to the printed URL is stored in that channel; audited as cli', async () => {
      const created = await json<{
        channel: Record<string, unknown>
        publishing: { webhook_id: string; token: string; path: string; url: string }
      }>(['channel', 'create', 'ops-alerts', '--display-name', 'Ops alerts', '--description', 'pages at night'])
      assert.deepEqual(
        (({ name, display_name, description, accent_color, visibility }) => ({
          name,
          display_name,
          description,
          accent_color,
          visibility,
        }))(created.channel),
        {
          name: 'ops-alerts',
          display_name: 'Ops alerts',
          description: 'pages at night',
          accent_color: '#4f6bed',
          visibility: 'public',
        },
      )
      // Like POST /api/v1/channels: the channel's own publishing hook, shown this once.
      assert.equal(created.publishing.path, `/hooks/${created.publishing.token}`)
      assert.equal(created.publishing.url, `${n.base}${created.publishing.path}`)
      const api = await n.client.get('/api/v1/channels/ops-alerts', { cookie })
      assert.equal(api.status, 200)
      assert.deepEqual(
        (({ role, ...rest }) => rest)(api.body.channel),
        created.channel,
        'the server reads the channel the command wrote',
      )

      const text = await run(['hook', 'create', '--channel', 'ops-alerts'])
      const m = text.match(
        /^hook (wh_[\w-]+) created on channel ops-alerts \(a payload may name another public channel\): (http:\/\/\S+)\nStore it now: it is shown only once\. .*\n$/,
      )
      assert.ok(m, text)
      const [, hookId, url] = m
      assert.equal(new URL(url!).origin, n.base)
      const delivered = await fetch(url!, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ text: 'deployed v1.2' }),
      })
      assert.equal(delivered.status, 200, await delivered.text())
      assert.equal(await storedIn('deployed v1.2'), 'ops-alerts')
      const inbox = await n.client.get('/api/v1/notifications?channel=ops-alerts', { cookie })
      assert.deepEqual(
        inbox.body.notifications.map((x: { body: string }) => x.body),
        ['deployed v1.2'],
      )
      // An unlocked hook may send to another public channel; a locked one keeps its own.
      assert.equal(
        (await n.client.post(new URL(url!).pathname, { body: { text: 'to general', channel: 'general' } })).status,
        200,
      )
      assert.equal(await storedIn('to general'), 'general')
      const locked = await json<Hook & { path: string; url: string }>([
        'hook',
        'create',
        '--channel',
        'ops-alerts',
        '--lock-channel',
      ])
      assert.deepEqual(
        [locked.channel, locked.channel_locked, locked.kind, locked.active],
        ['ops-alerts', true, 'webhook', true],
      )
      assert.equal((await n.client.post(locked.path, { body: { text: 'locked one', channel: 'general' } })).status, 200)
      assert.equal(await storedIn('locked one'), 'ops-alerts')
      assert.equal(
        (await n.client.post(created.publishing.path, { body: { text: 'by the channel hook' } })).status,
        200,
      )
      assert.equal(await storedIn('by the channel hook'), 'ops-alerts')

      const priv = await json<{ channel: Record<string, unknown> }>([
        'channel',
        'create',
        'sec-ops',
        '--private',
        '--color',
        '#AABBCC',
      ])
      assert.deepEqual([priv.channel.visibility, priv.channel.accent_color], ['private', '#aabbcc'])

      const entries = (await audit()).filter((e) => ['channel.create', 'webhook.create'].includes(e.action))
      assert.deepEqual(
        entries.slice(0, 4).map((e) => [e.action, e.target, e.details]),
        [
          ['channel.create', 'sec-ops', { visibility: 'private' }],
          ['webhook.create', locked.id, { channel: 'ops-alerts', channel_locked: true }],
          ['webhook.create', hookId, { channel: 'ops-alerts', channel_locked: false }],
          ['channel.create', 'ops-alerts', { visibility: 'public' }],
        ],
      )
      assert.ok(entries.slice(0, 4).every((e) => e.actor.startsWith('cli:')))
    })

    test('channel list and hook list: what the API shows, never a token; --channel filters', async () => {
      const channels = await json<Array<Record<string, unknown>>>(['channel', 'list'])
      const api = (await n.client.get('/api/v1/channels', { cookie })).body.channels
      assert.deepEqual(
        channels,
        api.map(({ role, ...rest }: Record<string, unknown>) => rest),
      )
      assert.ok(channels.some((c) => c.name === 'sec-ops' && c.visibility === 'private'))
      const table = await run(['channel', 'list'])
      assert.match(table, /^NAME +DISPLAY NAME +VISIBILITY +CREATED +DESCRIPTION\n/)
      assert.match(table, /\nops-alerts +Ops alerts +public +\S+ +pages at night\n/)

      const fresh = await json<{ id: string; token: string }>(['hook', 'create', '--channel', 'sec-ops'])
      const tokens = [
        fresh.token,
        (await n.client.post('/api/v1/webhooks', { cookie, body: { channel: 'sec-ops' } })).body.webhook.token,
      ]
      const listed = await run(['hook', 'list', '--json'])
      const hooks = JSON.parse(listed) as Hook[]
      const table2 = await run(['hook', 'list'])
      for (const token of tokens) {
        assert.ok(!listed.includes(token) && !table2.includes(token), 'a list never shows a token')
      }
      assert.deepEqual(hooks, (await n.client.get('/api/v1/webhooks', { cookie })).body.webhooks)
      assert.ok(hooks.every((h) => !('token' in h) && !('path' in h)))
      assert.match(table2, /^ID +CHANNEL +LOCKED +KIND +CREATED +STATE\n/)
      assert.match(table2, new RegExp(`\\n${fresh.id} +sec-ops +no +webhook +\\S+ +active\\n`))

      const only = await json<Hook[]>(['hook', 'list', '--channel', 'sec-ops'])
      assert.deepEqual(
        only.map((h) => [h.channel, h.kind]),
        [
          ['sec-ops', 'channel'],
          ['sec-ops', 'webhook'],
          ['sec-ops', 'webhook'],
        ],
      )
    })

    test("hook revoke: the next delivery is refused as after the API's revoke; what it delivered stays; again is no error", async () => {
      const hook = await json<Hook & { path: string }>(['hook', 'create', '--channel', 'ops-alerts'])
      assert.equal((await n.client.post(hook.path, { body: { text: 'before the revoke' } })).status, 200)
      const revoked = await run(['hook', 'revoke', hook.id])
      assert.equal(
        revoked,
        `hook ${hook.id} revoked: deliveries to its URL are refused from now on (what it delivered stays)\n`,
      )
      const refused = await n.client.post(hook.path, { body: { text: 'after the revoke' } })
      assert.equal(refused.status, 401)
      assert.equal(refused.body.error.code, 'hook_token_invalid')
      const bearer = await n.client.post('/api/v1/messages', { token: hook.path.slice(7), body: { text: 'bearer' } })
      assert.equal(bearer.status, 401)
      assert.equal(await storedIn('after the revoke'), undefined)
      assert.equal(await storedIn('before the revoke'), 'ops-alerts')

      // Again: nothing changes (the first revocation time stays), as the API answers 200 again.
      const [listedBefore] = (await json<Hook[]>(['hook', 'list'])).filter((h) => h.id === hook.id)
      assert.equal(listedBefore!.active, false)
      const again = await run(['hook', 'revoke', hook.id])
      assert.equal(again, `hook ${hook.id} was already revoked (at ${listedBefore!.revoked_at}); nothing changed\n`)
      const againJson = await json<Hook & { changed: boolean }>(['hook', 'revoke', hook.id])
      assert.deepEqual([againJson.changed, againJson.revoked_at], [false, listedBefore!.revoked_at])
      const viaApi = await n.client.post(`/api/v1/webhooks/${hook.id}/revoke`, { cookie })
      assert.equal(viaApi.status, 200)
      assert.equal(viaApi.body.webhook.revoked_at, listedBefore!.revoked_at)

      // A hook the API made, revoked on the command line, and the other way round.
      const apiHook = (await n.client.post('/api/v1/webhooks', { cookie, body: { channel: 'ops-alerts' } })).body
        .webhook
      await run(['hook', 'revoke', apiHook.id])
      assert.equal((await n.client.post(apiHook.path, { body: { text: 'x' } })).status, 401)
      const cliHook = await json<Hook & { path: string }>(['hook', 'create', '--channel', 'ops-alerts'])
      assert.equal((await n.client.post(`/api/v1/webhooks/${cliHook.id}/revoke`, { cookie })).status, 200)
      assert.equal((await n.client.post(cliHook.path, { body: { text: 'x' } })).status, 401)
      // Only the revocation that cut the hook off is on record, not the three that asked again.
      const revokes = (await audit()).filter((e) => e.action === 'webhook.revoke' && e.target === hook.id)
      assert.equal(revokes.length, 1)
      assert.match(revokes[0]!.actor, /^cli:/)
    })

    test('hook new-url: a second URL on the same channel and policy, printed once; the old one works until revoked', async () => {
      const first = await json<Hook & { path: string }>(['hook', 'create', '--channel', 'ops-alerts', '--lock-channel'])
      const printed = await run(['hook', 'new-url', first.id])
      const issued =
        /^hook (wh_\S+) issued for channel ops-alerts beside (\S+), which works until revoked \(notify hook revoke \2\): (\S+)\nStore it now: it is shown only once\./.exec(
          printed,
        )
      assert.ok(issued, printed)
      assert.equal(issued[2], first.id)
      const url = new URL(issued[3]!)
      assert.equal(url.origin, n.base)
      const second = await json<Hook & { path: string; token: string; url: string }>(['hook', 'new-url', first.id])
      assert.equal(second.url, `${n.base}${second.path}`)
      assert.deepEqual([second.channel, second.channel_locked, second.kind], ['ops-alerts', true, 'webhook'])
      // All three URLs deliver, into the hook's channel whatever the payload names (locked).
      for (const [i, path] of [first.path, url.pathname, second.path].entries()) {
        const text = `rotation ${i}`
        assert.equal((await n.client.post(path, { body: { text, channel: 'general' } })).status, 200)
        assert.equal(await storedIn(text), 'ops-alerts')
      }
      const listed = await json<Hook[]>(['hook', 'list', '--channel', 'ops-alerts'])
      for (const id of [first.id, issued[1]!, second.id]) assert.ok(listed.some((h) => h.id === id && h.active))
      const entries = (await audit()).filter((e) => e.action === 'webhook.new_url' && e.target === first.id)
      assert.deepEqual(entries.map((e) => e.details.new_webhook).sort(), [issued[1], second.id].sort())
      assert.ok(entries.every((e) => e.actor.startsWith('cli:')))

      // The rotation's second step; then the revoked id issues nothing more (as the API's 409).
      await run(['hook', 'revoke', first.id])
      assert.equal((await n.client.post(first.path, { body: { text: 'old url' } })).status, 401)
      assert.equal((await n.client.post(second.path, { body: { text: 'new url' } })).status, 200)
      const hooksBefore = (await json<Hook[]>(['hook', 'list'])).length
      const refused = await cli(['hook', 'new-url', first.id, ...db], env)
      assert.equal(refused.code, 1)
      assert.equal(refused.stdout, '')
      oneLine(refused)
      assert.match(refused.stderr, new RegExp(`^notify: webhook "${first.id}" is revoked\n$`))
      assert.equal((await n.client.post(`/api/v1/webhooks/${first.id}/new-url`, { cookie })).status, 409)
      assert.equal((await json<Hook[]>(['hook', 'list'])).length, hooksBefore)
    })

    test('bad input: one line, exit 2 when written wrong and 1 when refused, nothing written; the API refuses it too', async () => {
      const counts = async () =>
        Promise.all(
          (['channels', 'webhooks', 'admin_audit', 'stream_changes'] as const).map(async (table) =>
            Number(
              (
                await n.database.db
                  .selectFrom(table)
                  .select((eb) => eb.fn.countAll().as('c'))
                  .executeTakeFirstOrThrow()
              ).c,
            ),
          ),
        )
      const before = await counts()
      // [arguments, error, exit code, the API's answer to the same request]
      const cases: Array<[string[], RegExp, number, [string, unknown, number]?]> = [
        [
          ['channel', 'create', 'Ops Alerts'],
          /^notify: the name "Ops Alerts" is not a channel name/,
          2,
          ['/api/v1/channels', { name: 'Ops Alerts' }, 400],
        ],
        [
          ['channel', 'create', 'x'.repeat(64)],
          /is not a channel name/,
          2,
          ['/api/v1/channels', { name: 'x'.repeat(64) }, 400],
        ],
        [
          ['channel', 'create', 'ops-alerts'],
          /^notify: channel "ops-alerts" already exists\n$/,
          1,
          ['/api/v1/channels', { name: 'ops-alerts' }, 409],
        ],
        [
          ['channel', 'create', 'fresh', '--color', 'red'],
          /--color must be a colour as #rrggbb/,
          2,
          ['/api/v1/channels', { name: 'fresh', accent_color: 'red' }, 400],
        ],
        [
          ['channel', 'create', 'fresh', '--display-name', ''],
          /--display-name must be 1 to 100 characters/,
          2,
          ['/api/v1/channels', { name: 'fresh', display_name: '' }, 400],
        ],
        [
          ['channel', 'create', 'fresh', '--display-name', 'é'.repeat(101)],
          /--display-name/,
          2,
          ['/api/v1/channels', { name: 'fresh', display_name: 'é'.repeat(101) }, 400],
        ],
        [
          ['channel', 'create', 'fresh', '--description', 'd'.repeat(1001)],
          /--description must be at most 1000 characters/,
          2,
          ['/api/v1/channels', { name: 'fresh', description: 'd'.repeat(1001) }, 400],
        ],
        [
          ['hook', 'create', '--channel', 'nope'],
          /^notify: no channel "nope" \(notify channel list shows the channels\)\n$/,
          1,
          ['/api/v1/webhooks', { channel: 'nope' }, 404],
        ],
        [
          ['hook', 'create', '--channel', 'Not A Name'],
          /is not a channel name/,
          2,
          ['/api/v1/webhooks', { channel: 'Not A Name' }, 400],
        ],
        [['hook', 'create'], /--channel/, 2],
        [
          ['hook', 'revoke', 'wh_missing'],
          /^notify: no webhook "wh_missing" \(notify hook list shows the hooks\)\n$/,
          1,
          ['/api/v1/webhooks/wh_missing/revoke', undefined, 404],
        ],
        [
          ['hook', 'new-url', 'wh_missing'],
          /^notify: no webhook "wh_missing" \(notify hook list shows the hooks\)\n$/,
          1,
          ['/api/v1/webhooks/wh_missing/new-url', undefined, 404],
        ],
        [['hook', 'new-url'], /missing required argument/, 2],
        [['hook', 'list', '--channel', 'nope'], /no channel "nope"/, 1],
        [['channel', 'create'], /missing required argument/, 2],
      ]
      for (const [args, message, code, api] of cases) {
        const r = await cli([...args, ...db], env)
        assert.equal(r.code, code, `${args.join(' ')}: ${r.stderr}`)
        assert.equal(r.stdout, '')
        oneLine(r)
        assert.match(r.stderr, message)
        if (api) {
          const [path, body, status] = api
          const res = await n.client.post(path, { cookie, ...(body === undefined ? {} : { body }) })
          assert.equal(res.status, status, `${path} ${JSON.stringify(body)}: ${res.text}`)
        }
      }
      assert.deepEqual(await counts(), before)
      // A mistyped database is refused, not created.
      const missing = await cli(['channel', 'create', 'fresh', '--database', `sqlite:${join(scratch.path, 'nope.db')}`])
      assert.equal(missing.code, 1)
      oneLine(missing)
      assert.match(missing.stderr, /nope\.db/)
    })
  })
}

test('the channel and hook commands load none of the server stack', async () => {
  const database = `sqlite:${join(scratch.path, 'light.db')}`
  assert.equal((await cli(['migrate', '--database', database])).code, 0)
  const commands = [
    ['channel', 'create', 'light'],
    ['channel', 'list'],
    ['hook', 'create', '--channel', 'light'],
    ['hook', 'list'],
  ]
  for (const args of commands) {
    const r = await loadedPackages([MAIN, ...args, '--database', database], { PATH: process.env.PATH ?? '' })
    assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`)
    for (const heavy of ['fastify', 'undici', 'pg', 'pino', 'typebox', 'web-push']) {
      assert.ok(!r.packages.includes(heavy), `${args.join(' ')} loaded ${heavy}: ${r.packages.join(', ')}`)
    }
  }
})
