/**
 * Group commit (the delivery path on both databases): deliveries arriving together share one
 * transaction (PostgreSQL: one multi-row statement), each answered only once stored, ids in
 * queue order, and a bad row fails alone.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { hashToken } from '@gatehouse/kit'
import { metric } from '@gatehouse/testkit'
import { DeliveryLookups } from '../src/ingest/lookups.ts'
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
      const groups = async () => {
        const text = await (await fetch(`${n.base}/metrics`)).text()
        return {
          sum: Number(metric(text, 'notify_delivery_group_size_sum')),
          count: Number(metric(text, 'notify_delivery_group_size_count')),
        }
      }
      const groupsBefore = await groups()
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
      // The group-size histogram counted every delivery once, in at least one group.
      const groupsAfter = await groups()
      assert.equal(groupsAfter.sum - groupsBefore.sum, texts.length)
      assert.ok(groupsAfter.count - groupsBefore.count >= 1)
      assert.ok(groupsAfter.count - groupsBefore.count <= texts.length)
    })

    test('one batch: ids follow the queue order, each id holds its own row, nulls stay null', async () => {
      const queue = new WriteQueue(n.database)
      const titles = Array.from({ length: 200 }, (_, i) => `batched ${i} 'quoted' {brace} "dq" \\ ünï`)
      const ids = await Promise.all(
        titles.map((t, i) => queue.insert({ ...row('general', t), source: i % 2 === 0 ? null : `src-${i}` })),
      )
      for (let i = 1; i < ids.length; i++) assert.ok(ids[i]! > ids[i - 1]!, `id ${i} after id ${i - 1}`)
      const stored = await n.database.db
        .selectFrom('notifications')
        .select(['id', 'title', 'source', 'webhook_id'])
        .where('id', 'in', ids)
        .orderBy('id')
        .execute()
      assert.deepEqual(
        stored.map((r) => [Number(r.id), r.title, r.source, r.webhook_id]),
        ids.map((id, i) => [id, titles[i], i % 2 === 0 ? null : `src-${i}`, null]),
      )
    })

    // PostgreSQL sends a batch's columns joined by U+0001, a NULL as U+0002 (write-queue.ts);
    // values holding those characters, empty ones and NULLs must come back as they went in.
    // They go in nullable columns, where a value read back as NULL would fail no constraint.
    for (const [name, texts] of [
      ['empty texts and control characters inside longer ones', ['', 'a\u0002b', '\u0002\u0002', 'tail\u0003']],
      ['a value holding the separator', ['x\u0001y', '', 'plain']],
      ['a value that is the NULL mark alone', ['\u0002', '', 'plain']],
      ['one row, empty', ['']],
    ] as const) {
      test(`one batch, ${name}: every value stored exactly`, async () => {
        const queue = new WriteQueue(n.database)
        const ids = await Promise.all(
          texts.map((t, i) =>
            queue.insert({ ...row('general', `special ${i}`), username: t, source: i % 2 === 0 ? null : t }),
          ),
        )
        const stored = await n.database.db
          .selectFrom('notifications')
          .select(['title', 'username', 'source'])
          .where('id', 'in', ids)
          .orderBy('id')
          .execute()
        assert.deepEqual(
          stored.map((r) => [r.title, r.username, r.source]),
          texts.map((t, i) => [`special ${i}`, t, i % 2 === 0 ? null : t]),
        )
      })
    }

    test('a row that fails a constraint fails alone; the rest of its batch is stored', async () => {
      const queue = new WriteQueue(n.database)
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

/** A turn of the event loop (the write queue flushes on setImmediate). */
const nextTurn = () => new Promise((resolve) => setImmediate(resolve))

// SQLite's delivery path runs kit prepared queries on the connection under Kysely; a
// Kysely transaction open on that connection must neither see them nor swallow them.
describe('delivery path on the SQLite connection during a Kysely transaction', () => {
  let n: Notify
  before(async () => {
    n = await startNotify(backends.find((b) => b.name === 'sqlite')!)
  })
  after(() => n.close())

  test('an insert queued meanwhile is committed on its own, not rolled back with the transaction', async () => {
    const queue = new WriteQueue(n.database)
    const before = await count(n)
    let pending: Promise<number> | undefined
    await assert.rejects(
      n.database.db.transaction().execute(async (trx) => {
        await trx.insertInto('notifications').values(row('general', 'rolled back')).execute()
        pending = queue.insert(row('general', 'queued during the transaction'))
        await nextTurn()
        await nextTurn()
        throw new Error('roll back')
      }),
      /roll back/,
    )
    const id = await pending!
    assert.equal(await count(n), before + 1)
    const stored = await n.database.db
      .selectFrom('notifications')
      .select('title')
      .where('id', '=', id)
      .executeTakeFirst()
    assert.equal(stored?.title, 'queued during the transaction')
  })

  test("lookups do not see a transaction's uncommitted hook", async () => {
    const lookups = new DeliveryLookups(n.database)
    const hash = hashToken('uncommitted-token-0123456789')
    let seen: ReturnType<DeliveryLookups['hook']> | undefined
    await assert.rejects(
      n.database.db.transaction().execute(async (trx) => {
        await trx
          .insertInto('webhooks')
          .values({
            id: 'wh_uncommitted',
            token_hash: hash,
            channel: 'general',
            channel_locked: 0,
            kind: 'webhook',
            created_at: new Date().toISOString(),
            revoked_at: null,
          })
          .execute()
        seen = lookups.hook(hash)
        throw new Error('roll back')
      }),
      /roll back/,
    )
    assert.equal(await seen, undefined)
    assert.equal((await n.client.post('/hooks/uncommitted-token-0123456789', { body: { text: 'x' } })).status, 401)
    // Outside a transaction the prepared query answers, and sees committed rows.
    assert.equal((await lookups.hook(hashToken(DEV_TOKEN)))?.id, 'development')
  })
})
