/**
 * Search and pagination against an oracle: a few thousand generated notifications, random
 * queries (terms cut from the generated text, with filters), every page fetched; the
 * result must equal a plain substring check in JavaScript, newest first, whichever plan
 * (trigram index or scan) the database takes. On SQLite half the rows are indexed and
 * half are left to the background indexer (stopped here), so every query crosses the
 * boundary between the index and the unindexed tail.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { setTimeout as delay } from 'node:timers/promises'
import { type Logger, openDatabase, sql } from '@gatehouse/kit'
import { waitFor } from '@gatehouse/testkit'
import fc from 'fast-check'
import type { Kysely } from 'kysely'
import { openNotifyDatabase } from '../src/db/open.ts'
import type { DB } from '../src/db/schema.ts'
import {
  INDEX_BATCH,
  indexAll,
  indexedUpTo,
  indexPending,
  mergePendingSearch,
  SearchIndexer,
  searchMerger,
  searchSegments,
} from '../src/inbox/indexer.ts'
import { searchText } from '../src/ingest/draft.ts'
import { ADMIN, ADMIN_PASSWORD, backends, channel, DEV_TOKEN, type Notify, publish, startNotify } from './helpers.ts'

const VOCAB = [
  'Disk',
  'disk-full',
  'MEMORY',
  'latency',
  'timeout',
  'web-1',
  'web-12',
  'db_2',
  '100%',
  'Straße',
  'ok',
  'x',
]
const SEVERITIES = ['info', 'warning', 'error'] as const
const ROWS = 2500
const HOUR = 3_600_000

interface Row {
  id: number
  channel: string
  severity: string
  doc: string
}

for (const backend of backends) {
  describe(`search oracle (${backend.name})`, () => {
    let n: Notify
    let admin: string
    const rows: Row[] = []
    before(async () => {
      n = await startNotify(backend, { searchIndexIntervalMs: HOUR })
      admin = await n.client.login(ADMIN, ADMIN_PASSWORD)
      await channel(n, admin, 'alpha')
      await channel(n, admin, 'beta')
      const rnd = fc.sample(fc.array(fc.nat(), { minLength: 8, maxLength: 8 }), { numRuns: ROWS, seed: 42 })
      const values = rnd.map((r, i) => {
        const ch = r[0]! % 3 === 0 ? 'beta' : 'alpha'
        // Skewed vocabulary: some words are in most rows, some in few.
        const words = r.slice(1, 6).map((x, k) => VOCAB[(x % (k + 3)) + (k % 2) * 4]!)
        const text = `${words.join(' ')} n${i}`
        return {
          channel: ch,
          webhook_id: null,
          kind: 'message' as const,
          title: text,
          body: text,
          source: null,
          username: null,
          severity: SEVERITIES[r[6]! % 3]!,
          state: 'received' as const,
          content: '{}',
          search_text: searchText([ch, text]),
          created_at: new Date().toISOString(),
        }
      })
      for (let i = 0; i < values.length; i += 500) {
        // PostgreSQL: the first 1,500 rows merged into the trigram index, the rest left in its
        // pending list, so every query reads both.
        if (backend.name === 'postgres' && i === 1500) assert.ok((await mergePendingSearch(n.database.db)) > 0)
        const inserted = await n.database.db
          .insertInto('notifications')
          .values(values.slice(i, i + 500))
          .returning(['id', 'channel', 'severity', 'search_text'])
          .execute()
        for (const r of inserted)
          rows.push({ id: Number(r.id), channel: r.channel, severity: r.severity, doc: r.search_text })
      }
      if (backend.name === 'sqlite') {
        // Indexed in ten batches (ten segments), then merged by the indexer's steps, so the
        // queries read a merged index and the unindexed tail.
        for (let b = 0; b < 10; b++) assert.equal(await indexPending(n.database.db, ROWS / 20), ROWS / 20)
        assert.equal(await indexedUpTo(n.database.db), rows[ROWS / 2 - 1]!.id)
        assert.equal(await segments(n), 10)
        const merge = searchMerger(n.database)
        assert.equal(await merge(), true)
        while (await merge()) {}
        assert.equal(await segments(n), 1, 'a level of ten merged into one')
      }
    })
    after(() => n.close())

    test('random queries equal a substring oracle across all pages', async () => {
      const term = fc.oneof(
        fc.constantFrom(...VOCAB),
        fc.constantFrom(...VOCAB).chain((w) => fc.nat(w.length - 1).map((s) => w.slice(s, s + 4))),
        fc.constantFrom('web-1 ', 'zz', 'eb-12', 'ülk', 'n12', 'n2499'),
      )
      await fc.assert(
        fc.asyncProperty(
          fc.array(term, { minLength: 1, maxLength: 3 }),
          fc.option(fc.constantFrom('alpha', 'beta'), { nil: undefined }),
          fc.option(fc.constantFrom(...SEVERITIES), { nil: undefined }),
          fc.constantFrom(7, 50, 200),
          async (terms, ch, severity, limit) => {
            const clean = terms.map((t) => t.trim()).filter((t) => t !== '')
            fc.pre(clean.length > 0)
            const q = clean.map((t) => (t.includes(' ') ? `"${t}"` : t)).join(' ')
            const expected = rows
              .filter(
                (r) =>
                  clean.every((t) => r.doc.includes(t.toLowerCase())) &&
                  (ch === undefined || r.channel === ch) &&
                  (severity === undefined || r.severity === severity),
              )
              .map((r) => r.id)
              .sort((a, b) => b - a)
            const got: number[] = []
            let cursor: string | null = null
            let pages = 0
            do {
              const params = new URLSearchParams({ q, limit: String(limit) })
              if (ch) params.set('channel', ch)
              if (severity) params.set('severity', severity)
              if (cursor) params.set('before', cursor)
              const res = await n.client.get(`/api/v1/notifications?${params}`, { cookie: admin })
              assert.equal(res.status, 200)
              got.push(...res.body.notifications.map((x: { id: number }) => x.id))
              cursor = res.body.next_cursor
              pages++
            } while (cursor && pages < 400)
            assert.deepEqual(got, expected, `q=${q} channel=${ch} severity=${severity}`)
          },
        ),
        { numRuns: 25, seed: 7 },
      )
    })
  })

  describe(`search right after ingestion (${backend.name})`, () => {
    let n: Notify
    let admin: string
    before(async () => {
      n = await startNotify(backend, { searchIndexIntervalMs: HOUR })
      admin = await n.client.login(ADMIN, ADMIN_PASSWORD)
    })
    after(() => n.close())

    test('a delivery is found at once, before and after the indexer ran', async () => {
      const ids: number[] = []
      for (const word of ['quokka-7731 first', 'quokka-7731 second', 'other'])
        ids.push(await publish(n, DEV_TOKEN, `zebrafish ${word}`))
      const expected = [ids[1]!, ids[0]!]
      const search = async (q: string, limit = 50) => {
        const res = await n.client.get(`/api/v1/notifications?q=${encodeURIComponent(q)}&limit=${limit}`, {
          cookie: admin,
        })
        assert.equal(res.status, 200)
        return res.body.notifications.map((x: { id: number }) => x.id)
      }
      if (backend.name === 'sqlite') {
        // Not indexed yet: the trigram index knows none of these words.
        assert.ok((await indexedUpTo(n.database.db)) < ids[0]!)
      }
      assert.deepEqual(await search('quokka-7731'), expected)
      assert.deepEqual(await search('QUOKKA-7731 second'), [ids[1]!])
      assert.deepEqual(await search('zebrafish', 2), ids.slice(1).reverse())
      if (backend.name === 'sqlite') {
        // One of the two indexed, then both: the same answers, never a duplicate.
        assert.equal(await indexPending(n.database.db, 1), 1)
        assert.deepEqual(await search('quokka-7731'), expected)
        await indexAll(n.database)
        assert.equal(await indexedUpTo(n.database.db), ids[2]!)
      } else {
        // The deliveries sat in the trigram index's pending list; now merged into the index.
        assert.ok((await mergePendingSearch(n.database.db)) > 0)
        assert.equal(await mergePendingSearch(n.database.db), 0)
      }
      assert.deepEqual(await search('quokka-7731'), expected)
      assert.deepEqual(await search('zebrafish'), [...ids].reverse())
    })
  })
}

describe('the search indexer merges its segments (sqlite)', () => {
  test('bursts indexed one pass each are merged; FTS5 no longer merges by itself', async () => {
    const n = await startNotify(backends.find((b) => b.name === 'sqlite')!, { searchIndexIntervalMs: 5 })
    try {
      const automerge = await sql<{ v: number }>`select v from notification_fts_config where k = 'automerge'`.execute(
        n.database.db,
      )
      assert.equal(Number(automerge.rows[0]?.v), 0)
      assert.equal(await usermerge(n), 8)
      // Ten bursts, each indexed before the next: ten segments unless the indexer merges.
      const admin = await n.client.login(ADMIN, ADMIN_PASSWORD)
      await channel(n, admin, 'bursts')
      // A burst is one insert, so one indexing pass takes all of it.
      for (let burst = 0; burst < 10; burst++) {
        const last = await insertBurst(
          n.database.db,
          [0, 1, 2].map((i) => `burst ${burst} row ${i}`),
        )
        await waitFor('the indexer to reach the last row', async () => (await indexedUpTo(n.database.db)) >= last)
      }
      // Passes that index merge a level of eight, idle ones a level of four; which passes
      // find nothing depends on timing, but no level keeps four once the indexer is idle.
      await waitFor('at most 4 segments', async () => (await segments(n)) <= 4)
      assert.equal(await usermerge(n), 8, "the index's own level is unchanged")
      const found = await n.client.get(`/api/v1/notifications?q=${encodeURIComponent('burst 4 row 2')}`, {
        cookie: admin,
      })
      assert.equal(found.status, 200)
      assert.deepEqual(
        found.body.notifications.map((x: { title: string }) => x.title),
        ['burst 4 row 2'],
      )
    } finally {
      await n.close()
    }
  })

  test('a backlog is merged a level of eight while it is indexed, a level of four once idle', async () => {
    const n = await startNotify(backends.find((b) => b.name === 'sqlite')!, { searchIndexIntervalMs: 5 })
    try {
      const admin = await n.client.login(ADMIN, ADMIN_PASSWORD)
      await channel(n, admin, 'bursts')
      // Five full batches, committed at once: the indexer indexes them in five passes in a row
      // (five segments, fewer than eight), then the first idle pass merges all five into one.
      // A level of four throughout would have merged the first four alone and left two.
      const texts = Array.from({ length: 5 * INDEX_BATCH }, (_, i) => `backlog row ${i}`)
      const last = await n.database.db.transaction().execute(async (trx) => {
        let id = 0
        for (let i = 0; i < texts.length; i += 1000) id = await insertBurst(trx, texts.slice(i, i + 1000))
        return id
      })
      await waitFor('the indexer to reach the last row', async () => (await indexedUpTo(n.database.db)) >= last)
      await waitFor('one segment', async () => (await segments(n)) === 1)
      assert.equal(await usermerge(n), 8)
      const found = await n.client.get(`/api/v1/notifications?q=${encodeURIComponent('backlog row 4999')}`, {
        cookie: admin,
      })
      assert.deepEqual(
        found.body.notifications.map((x: { title: string }) => x.title),
        ['backlog row 4999'],
      )
    } finally {
      await n.close()
    }
  })
})

const segments = (n: Notify) => searchSegments(n.database.db)

async function usermerge(n: Notify): Promise<number> {
  const r = await sql<{ v: number }>`select v from notification_fts_config where k = 'usermerge'`.execute(n.database.db)
  return Number(r.rows[0]?.v)
}

/** Insert one notification per text into channel `bursts` in one statement; the last id. */
async function insertBurst(db: Kysely<DB>, texts: string[]): Promise<number> {
  const inserted = await db
    .insertInto('notifications')
    .values(
      texts.map((text) => ({
        channel: 'bursts',
        kind: 'message' as const,
        title: text,
        body: text,
        severity: 'info',
        state: 'received' as const,
        content: '{}',
        search_text: searchText(['bursts', text]),
        created_at: new Date().toISOString(),
      })),
    )
    .returning('id')
    .execute()
  return Number(inserted.at(-1)!.id)
}

/** Poll `check` every 5 ms for up to 10 s. */
describe('search index merge by a role that does not own the index (postgres)', () => {
  test('one warning, the indexer stops merging, and the owner still can', async () => {
    const backend = backends.find((b) => b.name === 'postgres')!
    const url = await backend.url()
    const owner = await openNotifyDatabase(url)
    const role = `guest_${process.pid}`
    await sql.raw(`create role ${role} login`).execute(owner.db)
    const guest = await openDatabase<DB>({ url: url.replace('postgres@', `${role}@`) })
    const warnings: string[] = []
    const logger = { warn: (_: unknown, msg: string) => warnings.push(msg) } as unknown as Logger
    const indexer = new SearchIndexer(guest, logger, 10)
    try {
      indexer.start()
      for (let i = 0; i < 200 && warnings.length === 0; i++) await delay(10)
      await delay(100) // ten more intervals: a loop that went on would warn again
      assert.deepEqual(warnings, ['cannot merge the search index pending list; inserts will'])
      assert.equal(await mergePendingSearch(owner.db), 0)
    } finally {
      await indexer.stop()
      await guest.close()
      await owner.close()
    }
  })
})
