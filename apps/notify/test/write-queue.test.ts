/**
 * Group commit (SQLite's delivery path; the queue works on either database): deliveries
 * arriving together share one transaction, each answered only once stored, and a bad row
 * fails alone.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { WriteQueue } from '../src/ingest/write-queue.ts'
import { backends, count, DEV_TOKEN, type Notify, startNotify } from './helpers.ts'

const row = (channel: string, title: string) => ({
  channel,
  webhook_id: null,
  kind: 'message' as const,
  title,
  body: title,
  source: null,
  username: null,
  severity: 'info' as const,
  state: 'received' as const,
  content: '{}',
  search_text: `${channel} ${title}`,
  created_at: new Date().toISOString(),
})

for (const backend of backends) {
  describe(`write queue (${backend.name})`, () => {
    let n: Notify
    before(async () => {
      n = await startNotify(backend)
    })
    after(() => n.close())

    test('concurrent deliveries over HTTP: every 2xx is stored, once, with its own text', async () => {
      const before = await count(n)
      const texts = Array.from({ length: 120 }, (_, i) => `burst delivery ${i}`)
      const responses = await Promise.all(texts.map((text) => n.client.post(`/hooks/${DEV_TOKEN}`, { body: { text } })))
      for (const res of responses) {
        assert.equal(res.status, 200)
        assert.equal(res.text, 'ok')
      }
      assert.equal(await count(n), before + texts.length)
      const stored = await n.database.db
        .selectFrom('notifications')
        .select(['id', 'body'])
        .where('body', 'like', 'burst delivery %')
        .execute()
      assert.deepEqual(stored.map((r) => r.body).sort(), [...texts].sort())
      assert.equal(new Set(stored.map((r) => r.id)).size, texts.length)
    })

    test('a row that fails a constraint fails alone; the rest of its batch is stored', async () => {
      const queue = new WriteQueue(n.database.db)
      const before = await count(n)
      const results = await Promise.allSettled([
        queue.insert(row('general', 'good one')),
        queue.insert(row('no-such-channel', 'bad')),
        queue.insert(row('general', 'good two')),
      ])
      assert.equal(results[0]!.status, 'fulfilled')
      assert.equal(results[1]!.status, 'rejected')
      assert.equal(results[2]!.status, 'fulfilled')
      const [a, c] = [results[0], results[2]] as PromiseFulfilledResult<number>[]
      assert.ok(a!.value < c!.value)
      assert.equal(await count(n), before + 2)
      const titles = await n.database.db
        .selectFrom('notifications')
        .select('title')
        .where('id', 'in', [a!.value, c!.value])
        .orderBy('id')
        .execute()
      assert.deepEqual(
        titles.map((t) => t.title),
        ['good one', 'good two'],
      )
    })
  })
}
