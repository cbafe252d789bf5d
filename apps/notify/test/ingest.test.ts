import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { ADMIN, ADMIN_PASSWORD, backends, channel, count, DEV_TOKEN, type Notify, startNotify } from './helpers.ts'

const fixture = (name: string) => readFileSync(join(import.meta.dirname, 'fixtures', name), 'utf8')

for (const backend of backends) {
  describe(`ingestion (${backend.name})`, () => {
    let n: Notify
    let admin: string
    let opsToken: string
    before(async () => {
      n = await startNotify(backend)
      admin = await n.client.login(ADMIN, ADMIN_PASSWORD)
      opsToken = (await channel(n, admin, 'ops')).token
      await channel(n, admin, 'alerts')
      await channel(n, admin, 'builds')
      await channel(n, admin, 'secret', 'private')
    })
    after(() => n.close())

    const latest = async () => {
      const res = await n.client.get('/api/v1/notifications?limit=1', { cookie: admin })
      return res.body.notifications[0]
    }

    test('Alertmanager through its Slack receiver: attachments kept, searchable, override to a public channel', async () => {
      const res = await n.client.post(`/hooks/${DEV_TOKEN}`, {
        raw: fixture('alertmanager-slack.json'),
        type: 'application/json',
      })
      assert.equal(res.status, 200)
      assert.equal(res.text, 'ok')
      const item = await latest()
      assert.equal(item.channel, 'alerts')
      assert.equal(item.severity, 'error')
      assert.equal(item.username, 'Alertmanager')
      assert.match(item.title, /FIRING:2\] DiskFull/)
      assert.match(item.content.attachments[0].text, /97% full/)
      const found = await n.client.get('/api/v1/notifications?q=97%25%20FULL', { cookie: admin })
      assert.deepEqual(
        found.body.notifications.map((x: { id: number }) => x.id),
        [item.id],
      )
    })

    test('Grafana Slack contact point: numeric field values, blocks text and hex colour', async () => {
      const res = await n.client.post(`/hooks/${DEV_TOKEN}`, {
        raw: fixture('grafana-slack.json'),
        type: 'application/json',
      })
      assert.equal(res.status, 200)
      const item = await latest()
      assert.equal(item.channel, 'ops')
      assert.equal(item.severity, 'error')
      assert.deepEqual(item.content.attachments[0].fields[1], { title: 'p95', value: '812.4', short: true })
      const q = await n.client.get('/api/v1/notifications?q=dashboard%20linked', { cookie: admin })
      assert.equal(q.body.notifications[0]?.id, item.id)
    })

    test('GitLab-style attachments: an unsafe link is refused (spec), a safe one kept with the text', async () => {
      const unsafe = await n.client.post(`/hooks/${DEV_TOKEN}`, {
        raw: fixture('gitlab-attachments.json'),
        type: 'application/json',
      })
      assert.equal(unsafe.status, 400)
      assert.equal(unsafe.body.error.code, 'invalid_payload')
      assert.match(unsafe.body.error.message, /^attachments\[0\]\.title_link must be an absolute http or https URL/)
      const link = 'https://gitlab.example.internal/platform/api/-/pipelines/48213'
      const res = await n.client.post(`/hooks/${DEV_TOKEN}`, {
        raw: fixture('gitlab-attachments.json').replace('javascript:alert(1)', link),
        type: 'application/json',
      })
      assert.equal(res.status, 200)
      const item = await latest()
      assert.equal(item.channel, 'builds')
      assert.equal(item.content.attachments[0].title_link, link)
      assert.match(item.content.attachments[0].text, /rspec 3\/4/)
    })

    test('Mattermost props.attachments and form-encoded payload=', async () => {
      const payload = encodeURIComponent(fixture('mattermost-props.json'))
      const res = await n.client.post(`/hooks/${DEV_TOKEN}`, {
        raw: `payload=${payload}`,
        type: 'application/x-www-form-urlencoded',
      })
      assert.equal(res.status, 200)
      const item = await latest()
      assert.equal(item.severity, 'success')
      assert.match(item.title, /Nightly backup/)
    })

    test('raw newlines and tabs inside JSON strings are accepted', async () => {
      const res = await n.client.post(`/hooks/${DEV_TOKEN}`, {
        raw: fixture('raw-newlines.json.txt'),
        type: 'application/json',
      })
      assert.equal(res.status, 200)
      const item = await latest()
      assert.equal(item.body, 'cron job failed on db-2\n\texit status 3\nsee /var/log/backup.log')
    })

    test('channel override: locked hooks keep their channel; unknown and private channels are not selectable', async () => {
      const locked = await n.client.post(`/hooks/${opsToken}`, { body: { text: 'locked hook', channel: 'alerts' } })
      assert.equal(locked.status, 200)
      assert.equal((await latest()).channel, 'ops')
      await n.client.post(`/hooks/${DEV_TOKEN}`, { body: { text: 'to private', channel: '#secret' } })
      assert.equal((await latest()).channel, 'general')
      await n.client.post(`/hooks/${DEV_TOKEN}`, { body: { text: 'to nowhere', channel: 'nope' } })
      assert.equal((await latest()).channel, 'general')
      const hook = await n.client.post('/api/v1/webhooks', { cookie: admin, body: { channel: 'ops' } })
      await n.client.post(hook.body.webhook.path, { body: { text: 'unlocked', channel: 'alerts' } })
      assert.equal((await latest()).channel, 'alerts')
    })

    test('hostile and empty compatibility payloads: 400 and nothing stored', async () => {
      const before = await count(n)
      const bad: Array<[string, string]> = [
        ['', 'application/json'],
        ['not json', 'application/json'],
        ['[1,2]', 'application/json'],
        ['{"text": ""}', 'application/json'],
        ['{"text": 5, "attachments": {}}', 'application/json'],
        ['{"attachments": [1]}', 'application/json'],
        ['{"text": {"nested": true}}', 'application/json'],
        // A form without payload= is a plain ntfy-style message now (ntfy.test.ts); a bad payload= is not.
        ['payload=not-json', 'application/x-www-form-urlencoded'],
        [`{"text": "${'x'.repeat(40_001)}"}`, 'application/json'],
        ['{"__proto__": {"admin": true}, "text": ""}', 'application/json'],
      ]
      // A body that does not parse is invalid_json, as on every endpoint; one that parses but is refused, invalid_payload.
      const unparseable = new Set(['', 'not json', 'payload=not-json'])
      for (const [raw, type] of bad) {
        const res = await n.client.post(`/hooks/${DEV_TOKEN}`, { raw, type })
        assert.equal(res.status, 400, raw.slice(0, 40))
        assert.equal(res.body.error.code, unparseable.has(raw) ? 'invalid_json' : 'invalid_payload', raw.slice(0, 40))
      }
      const big = await n.client.post(`/hooks/${DEV_TOKEN}`, {
        raw: `{"text":"${'y'.repeat(1_100_000)}"}`,
        type: 'application/json',
      })
      assert.equal(big.status, 413)
      assert.equal(await count(n), before)
    })

    test('native cards: accepted, and strict refusals name the offending path', async () => {
      const card = {
        version: 1,
        title: 'Deploy api v42',
        summary: 'Rolled out to 3 regions',
        severity: 'warning',
        source: 'deploybot',
        metrics: [{ label: 'duration', value: 93.5 }],
        rows: [{ primary: 'eu-west', tags: ['canary'], emphasis: 'strong' }],
        fields: [{ label: 'commit', value: 'abc123' }],
        badges: [{ text: 'prod', tone: 'danger' }],
        images: [{ url: 'https://img.example/x.png', alt: 'error rate graph' }],
        links: [{ label: 'Pipeline', url: 'https://ci.example/p/1' }],
        actions: [{ type: 'link', label: 'Open', url: 'http://ci.example/p/1' }],
        views: [{ type: 'cross-list', title: 'Regions', rows: [{ primary: 'us-east' }] }],
      }
      const ok = await n.client.post('/api/v1/notifications', { token: DEV_TOKEN, body: card })
      assert.equal(ok.status, 201)
      const stored = await n.client.get(`/api/v1/notifications/${ok.body.notification.id}`, { cookie: admin })
      assert.equal(stored.body.notification.kind, 'card')
      assert.deepEqual(stored.body.notification.content.metrics, [{ label: 'duration', value: '93.5' }])
      const bySource = await n.client.get('/api/v1/notifications?q=DEPLOYBOT%20canary', { cookie: admin })
      assert.equal(bySource.body.notifications[0].id, ok.body.notification.id)

      const before = await count(n)
      const cases: Array<[unknown, string]> = [
        [{ ...card, version: 2 }, 'card.version'],
        [{ ...card, version: '1' }, 'card.version'],
        [{ ...card, extra: 1 }, 'card.extra'],
        [{ ...card, title: undefined }, 'card.title'],
        [{ ...card, links: [{ label: 'x', url: 'javascript:alert(1)' }] }, 'card.links[0].url'],
        [{ ...card, images: [{ url: 'https://i.example/a.png' }] }, 'card.images[0].alt'],
        [{ ...card, images: [{ url: 'data:image/png;base64,AAAA', alt: 'x' }] }, 'card.images[0].url'],
        [{ ...card, actions: [{ type: 'script', label: 'x' }] }, 'card.actions[0].type'],
        [{ ...card, views: [{ type: 'html', title: 'x', rows: [] }] }, 'card.views[0].type'],
        [{ ...card, rows: [{ primary: 'x', tags: ['a'], onclick: 'x' }] }, 'card.rows[0].onclick'],
        [{ ...card, badges: Array.from({ length: 13 }, () => ({ text: 'b' })) }, 'card.badges'],
        [{ ...card, severity: 'panic' }, 'card.severity'],
        [[card], 'card'],
      ]
      for (const [body, path] of cases) {
        const res = await n.client.post('/api/v1/notifications', { token: DEV_TOKEN, body })
        assert.equal(res.status, 400, path)
        assert.equal(res.body.error.code, 'invalid_card')
        assert.ok(res.body.error.message.startsWith(`${path}:`), `${path} -> ${res.body.error.message}`)
      }
      const notJson = await n.client.post('/api/v1/notifications', {
        token: DEV_TOKEN,
        raw: '{',
        type: 'application/json',
      })
      assert.equal(notJson.status, 400)
      assert.equal(await count(n), before)
    })

    test('generic messages: text/plain, JSON {text, source}, extra fields refused', async () => {
      const plain = await n.client.post('/api/v1/messages', { token: DEV_TOKEN, raw: 'backup ok', type: 'text/plain' })
      assert.equal(plain.status, 201)
      const json = await n.client.post('/api/v1/messages', { token: DEV_TOKEN, body: { text: 'hi', source: 'cron' } })
      assert.equal(json.status, 201)
      assert.equal((await latest()).source, 'cron')
      const before = await count(n)
      for (const body of [{ text: 'hi', level: 'x' }, { source: 'x' }, { text: '' }, { text: 1 }]) {
        const res = await n.client.post('/api/v1/messages', { token: DEV_TOKEN, body })
        assert.equal(res.status, 400, JSON.stringify(body))
        assert.equal(res.body.error.code, 'invalid_message')
      }
      const broken = await n.client.post('/api/v1/messages', {
        token: DEV_TOKEN,
        raw: '{"text":',
        type: 'application/json',
      })
      assert.equal(broken.body.error.code, 'invalid_json')
      const xml = await n.client.post('/api/v1/messages', { token: DEV_TOKEN, raw: '<x/>', type: 'application/xml' })
      assert.equal(xml.status, 400)
      assert.equal(await count(n), before)
    })

    test('tokens: unknown or missing tokens are 401; a revoked hook stops at once and its notifications stay', async () => {
      for (const [path, token] of [
        ['/api/v1/messages', 'wrong-token'],
        ['/api/v1/messages', undefined],
        ['/api/v1/notifications', 'wrong-token'],
      ] as const) {
        const res = await n.client.post(path, { ...(token ? { token } : {}), body: { text: 'x' } })
        assert.equal(res.status, 401)
        assert.equal(res.body.error.code, 'hook_token_invalid')
      }
      assert.equal((await n.client.post('/hooks/nope', { body: { text: 'x' } })).status, 401)
      const hook = await n.client.post('/api/v1/webhooks', { cookie: admin, body: { channel: 'ops' } })
      const token = hook.body.webhook.token as string
      const delivered = await n.client.post(hook.body.webhook.path, { body: { text: 'before revoke' } })
      assert.equal(delivered.status, 200)
      const kept = (await latest()).id
      const revoked = await n.client.post(`/api/v1/webhooks/${hook.body.webhook.id}/revoke`, { cookie: admin })
      assert.equal(revoked.status, 200)
      assert.equal((await n.client.post(hook.body.webhook.path, { body: { text: 'after' } })).status, 401)
      assert.equal((await n.client.post('/api/v1/messages', { token, body: { text: 'after' } })).status, 401)
      assert.equal((await n.client.get(`/api/v1/notifications/${kept}`, { cookie: admin })).status, 200)
      // Only the hash is stored.
      const rows = await n.database.db.selectFrom('webhooks').select('token_hash').execute()
      assert.ok(rows.every((r) => r.token_hash !== token && /^[0-9a-f]{64}$/.test(r.token_hash)))
    })
  })
}
