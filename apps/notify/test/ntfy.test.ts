import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { after, before, describe, test } from 'node:test'
import { promisify } from 'node:util'
import fc from 'fast-check'
import { isPlainBody, plainDraft, withPublishHeaders } from '../src/ingest/ntfy.ts'
import { ADMIN, ADMIN_PASSWORD, backends, DEV_TOKEN, type Notify, startNotify } from './helpers.ts'

for (const backend of backends) {
  describe(`ntfy-style publishing on /hooks/{token} (${backend.name})`, () => {
    let n: Notify
    let admin: string
    before(async () => {
      n = await startNotify(backend)
      admin = await n.client.login(ADMIN, ADMIN_PASSWORD)
    })
    after(() => n.close())

    const latest = async () => {
      const res = await n.client.get('/api/v1/notifications?limit=1', { cookie: admin })
      return res.body.notifications[0]
    }

    test('curl -d "disk full" (a form content type with no payload field) stores a message', async () => {
      // The exact request curl sends: -d implies application/x-www-form-urlencoded.
      // The server runs in this process: the client must not block its event loop.
      const r = await promisify(execFile)('curl', [
        '-sS',
        '-d',
        'disk full on db-1',
        `${n.client.base}/hooks/${DEV_TOKEN}`,
      ])
      assert.equal(r.stdout, 'ok')
      const item = await latest()
      assert.equal(item.kind, 'message')
      assert.equal(item.title, 'disk full on db-1')
      assert.equal(item.body, 'disk full on db-1')
      assert.equal(item.severity, 'info')
    })

    test('Title, Priority and Tags headers map onto the title, the severity and searchable tags', async () => {
      const res = await n.client.post(`/hooks/${DEV_TOKEN}`, {
        raw: 'backup failed after 3 retries',
        type: 'text/plain',
        headers: { title: 'Nightly backup', priority: 'urgent', tags: 'backup, db-1' },
      })
      assert.equal(res.status, 200, res.text)
      const item = await latest()
      assert.equal(item.title, 'Nightly backup')
      assert.equal(item.body, 'backup failed after 3 retries')
      assert.equal(item.severity, 'critical')
      assert.deepEqual(item.content.tags, ['backup', 'db-1'])
      const found = await n.client.get('/api/v1/notifications?q=db-1', { cookie: admin })
      assert.equal(found.body.notifications[0]?.id, item.id)
    })

    test('the short ntfy header names work, and a severity tag sets the severity without Priority', async () => {
      await n.client.post(`/hooks/${DEV_TOKEN}`, { raw: 'x', headers: { t: 'Short', p: '4' } })
      assert.deepEqual((({ title, severity }) => ({ title, severity }))(await latest()), {
        title: 'Short',
        severity: 'error',
      })
      await n.client.post(`/hooks/${DEV_TOKEN}`, { raw: 'y', headers: { 'x-tags': 'warning,disk' } })
      assert.equal((await latest()).severity, 'warning')
    })

    test('the headers apply to a JSON compatibility payload too', async () => {
      const res = await n.client.post(`/hooks/${DEV_TOKEN}`, {
        body: { text: 'deploy finished' },
        headers: { title: 'Deploy', priority: 'high' },
      })
      assert.equal(res.status, 200)
      const item = await latest()
      assert.equal(item.kind, 'compat')
      assert.equal(item.title, 'Deploy')
      assert.equal(item.severity, 'error')
    })

    test('a bad Priority says what is allowed, and nothing is stored', async () => {
      const before = (await latest()).id
      const res = await n.client.post(`/hooks/${DEV_TOKEN}`, { raw: 'z', headers: { priority: 'loud' } })
      assert.equal(res.status, 400)
      assert.equal(res.body.error.code, 'invalid_payload')
      assert.equal(
        res.body.error.message,
        'Priority must be one of 1, 2, 3, 4, 5, min, low, default, high, urgent, max',
      )
      assert.equal((await latest()).id, before)
    })

    test('an empty plain body is refused as an empty message', async () => {
      const res = await n.client.post(`/hooks/${DEV_TOKEN}`, { raw: '   ', type: 'text/plain' })
      assert.equal(res.status, 400)
      assert.equal(res.body.error.message, 'text must not be empty')
    })
  })
}

test('isPlainBody: JSON objects and payload= forms stay compatibility payloads', () => {
  assert.equal(isPlainBody('application/json', 'disk full'), false)
  assert.equal(isPlainBody(undefined, ' {"text":"a"}'), false)
  assert.equal(isPlainBody('application/x-www-form-urlencoded', 'payload=%7B%7D'), false)
  assert.equal(isPlainBody('application/x-www-form-urlencoded', 'disk full'), true)
  assert.equal(isPlainBody('text/plain', 'disk full'), true)
  assert.equal(isPlainBody(undefined, 'disk full'), true)
})

test('Priority names an own severity only: Object.prototype keys are refused with a coded 400', () => {
  for (const p of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
    assert.throws(
      () => withPublishHeaders(plainDraft('disk full'), { priority: p }),
      (err: { code?: string; statusCode?: number }) => err.code === 'invalid_payload' && err.statusCode === 400,
      p,
    )
  }
})

test('property: any header values either apply or fail with a coded 400, never another error', () => {
  const headerValue = fc.option(fc.string({ maxLength: 300 }), { nil: undefined })
  fc.assert(
    fc.property(
      headerValue,
      headerValue,
      headerValue,
      fc.string({ minLength: 1, maxLength: 200 }),
      (t, p, tags, text) => {
        const headers: Record<string, string | undefined> = { title: t, priority: p, tags }
        let draft: ReturnType<typeof plainDraft>
        try {
          draft = plainDraft(text)
        } catch (err) {
          assert.equal((err as { code?: string }).code, 'invalid_message')
          return
        }
        try {
          const out = withPublishHeaders(draft, headers)
          assert.ok(out.title.length <= 200)
          assert.ok(['info', 'success', 'warning', 'error', 'critical'].includes(out.severity))
        } catch (err) {
          assert.equal((err as { code?: string }).code, 'invalid_payload')
          assert.equal((err as { statusCode?: number }).statusCode, 400)
        }
      },
    ),
  )
})
