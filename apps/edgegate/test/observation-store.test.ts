/**
 * The group statements of `mergeGroup` on both databases: what a group stores is what its rows
 * say, value for value. On PostgreSQL a group's rows travel as one parameter per column (texts
 * joined by U+0001, bigints by commas), and the keys its read locks as two such texts, so these
 * pin the values that format could bend: quotes,
 * backslashes, commas, JSON escapes, non-ASCII text, empty texts, U+0001 itself (bound row by row
 * instead), millisecond values beyond 32 bits, NULLs, one-row groups, and pages of one group
 * naming the same fingerprint.
 */
import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { sql } from '@gatehouse/kit'
import { preparedName } from '@gatehouse/kit/db/pg-prepared.ts'
import { CompiledQuery } from 'kysely'
import { openEdgeDatabase } from '../src/db/open.ts'
import { mergeBatch, mergeGroup, PG_LOCK } from '../src/observations/group-merge.ts'
import { type Aggregate, mergeAggregates, toRow } from '../src/observations/merge.ts'
import { DIALECTS, lazyPostgres, newDatabase, waitFor } from './helpers.ts'

const pg = lazyPostgres()
after(() => pg.stop())

const BASE = Date.UTC(2026, 10, 22)

function aggregate(fingerprint: string, over: Partial<Aggregate> = {}): Aggregate {
  return {
    fingerprint,
    reported_status: 'unknown',
    first_seen_ms: BASE,
    last_seen_ms: BASE + 1000,
    count: 3,
    ips: ['192.0.2.1', '2001:db8::1'],
    ports: [22, 2222],
    sightings: [{ ip: '192.0.2.1', port: 40000, last_seen_ms: BASE + 1000 }],
    metadata: { sni: 'example.org' },
    ...over,
  }
}

// Texts that quoting, escaping or splitting would change.
const ODD = [
  `quote " and 'apostrophe', comma, {braces}, [brackets], backslash \\ and \\"`,
  'tab \t, newline \n, U+0002 \u0002, DEL \u007f',
  'non-ASCII: é, 東京, emoji 🛡️, RTL \u202e, BOM \ufeff',
  '\\u0001 as six characters, then \\x01',
  'NULL',
  '',
]

/** A stored row with its bigints as numbers (the kit parses int8 as a number on both). */
async function stored(d: Awaited<ReturnType<typeof openEdgeDatabase>>, instanceId: string) {
  const rows = await d.db.selectFrom('fingerprints').selectAll().where('instance_id', '=', instanceId).execute()
  // Sorted here: the database's collation need not be code-unit order.
  rows.sort((a, b) => (a.fingerprint < b.fingerprint ? -1 : a.fingerprint > b.fingerprint ? 1 : 0))
  return rows.map((r) => ({
    ...r,
    first_seen_ms: Number(r.first_seen_ms),
    last_seen_ms: Number(r.last_seen_ms),
    count: Number(r.count),
    oldest_sighting_ms: r.oldest_sighting_ms === null ? null : Number(r.oldest_sighting_ms),
    updated_ms: Number(r.updated_ms),
  }))
}

for (const dialect of DIALECTS) {
  describe(`observation group statements (${dialect})`, () => {
    test('odd texts, big and null bigints are stored as the rows say, then merged', async () => {
      const d = await openEdgeDatabase(await newDatabase(dialect, pg.get))
      try {
        const now = 8_640_000_000_000_000 // the largest Date, 2^53 > it > 2^32
        const incoming = [
          ...ODD.map((text, i) =>
            aggregate(`odd-${i}`, {
              reported_status: text,
              // A NUL only inside JSON text, which escapes it (a text column cannot hold one).
              metadata: { [text]: text, other: `${text}${text}`, nul: 'a\u0000b' },
              sightings: [],
            }),
          ),
          aggregate('big', {
            first_seen_ms: -62_135_596_800_000, // year 1
            last_seen_ms: 8_639_999_999_999_999,
            count: Number.MAX_SAFE_INTEGER,
            sightings: [{ ip: '192.0.2.9', port: 1, last_seen_ms: 4_102_444_800_123 }],
          }),
          aggregate('none', { ips: [], ports: [], sightings: [], metadata: {} }),
        ]
        for (const [instanceId, fingerprint] of [
          [`instance "q" \\ é,`, 'plain'],
          ['separator \u0001 inside', 'separated'],
          ['', 'empty instance'],
        ] as const) {
          const rows = [...incoming, aggregate(fingerprint)]
          await mergeGroup(d, [{ instanceId, incoming: rows }], 0, now)
          const want = rows
            .map((a) => toRow(instanceId, a, now))
            .map((r) => ({ ...r, oldest_sighting_ms: r.oldest_sighting_ms ?? null }))
            .sort((a, b) => (a.fingerprint < b.fingerprint ? -1 : 1))
          assert.deepEqual(await stored(d, instanceId), want, instanceId)
        }
        // Groups over the same rows take the merge path (lock, merge, upsert): two instances in
        // one group, then the one whose name holds U+0001 (its rows are bound one by one).
        const later = incoming.map((a) => ({ ...a, last_seen_ms: a.last_seen_ms + 1, ips: ['198.51.100.1'] }))
        for (const instances of [[`instance "q" \\ é,`, ''], ['separator \u0001 inside']]) {
          await mergeGroup(
            d,
            instances.map((instanceId) => ({ instanceId, incoming: later })),
            0,
            now + 1,
          )
          for (const instanceId of instances) {
            const want = incoming
              .map((a, i) => toRow(instanceId, mergeAggregates(a, later[i]!, 0), now + 1))
              .map((r) => ({ ...r, oldest_sighting_ms: r.oldest_sighting_ms ?? null }))
            const got = (await stored(d, instanceId)).filter((r) => r.updated_ms === now + 1)
            assert.deepEqual(
              got,
              want.sort((a, b) => (a.fingerprint < b.fingerprint ? -1 : 1)),
              instanceId,
            )
          }
        }
        assert.equal((await stored(d, '')).find((r) => r.fingerprint === 'big')!.count, Number.MAX_SAFE_INTEGER)
      } finally {
        await d.close()
      }
    })

    test('a one-row group with empty texts and no sightings', async () => {
      const d = await openEdgeDatabase(await newDatabase(dialect, pg.get))
      try {
        const a = aggregate('', { reported_status: '', sightings: [], metadata: {} })
        await mergeGroup(d, [{ instanceId: '', incoming: [a] }], 0, 5)
        assert.deepEqual(await stored(d, ''), [{ ...toRow('', a, 5), oldest_sighting_ms: null }])
      } finally {
        await d.close()
      }
    })

    test('pages of one group naming the same fingerprint store what page after page stores', async () => {
      const d = await openEdgeDatabase(await newDatabase(dialect, pg.get))
      try {
        // Conflicting values: the newer status and metadata win, sets join, extremes hold.
        const pages = [
          [aggregate('same', { reported_status: 'approved', metadata: { a: '1' } }), aggregate('other')],
          [
            aggregate('same', {
              reported_status: 'blocked',
              last_seen_ms: BASE + 5000,
              first_seen_ms: BASE - 5000,
              ips: ['198.51.100.7'],
              ports: [443],
              sightings: [{ ip: '198.51.100.7', port: 1, last_seen_ms: BASE + 5000 }],
              metadata: { b: `"2"\\` },
            }),
          ],
          [aggregate('same', { reported_status: 'pending', count: 1, metadata: {} })],
        ]
        await mergeGroup(
          d,
          pages.map((incoming) => ({ instanceId: 'grp', incoming })),
          0,
          9,
        )
        for (const incoming of pages) await mergeBatch(d, 'seq', incoming, 0, 9)
        const rows = async (id: string) => (await stored(d, id)).map((r) => ({ ...r, instance_id: undefined }))
        const grouped = await rows('grp')
        assert.deepEqual(grouped, await rows('seq'))
        assert.equal(grouped.find((r) => r.fingerprint === 'same')!.reported_status, 'blocked')
      } finally {
        await d.close()
      }
    })
  })
}

for (const dialect of DIALECTS) {
  describe(`observation group merges (${dialect})`, () => {
    test('groups of more rows than a merge slice, two in flight on the same rows, store what page after page stores', async () => {
      const d = await openEdgeDatabase(await newDatabase(dialect, pg.get))
      try {
        // Page p: 40 of 80 fingerprints, each page newer than the last (so the newest wins alike).
        const pages = Array.from({ length: 8 }, (_, p) =>
          Array.from({ length: 40 }, (_, k) =>
            aggregate(`fp-${String((p * 13 + k) % 80).padStart(2, '0')}`, {
              reported_status: `status ${p}`,
              last_seen_ms: BASE + 1000 * (p + 1),
              count: p,
              ips: [`192.0.2.${p + 1}`],
              ports: [1000 + k],
              sightings: [{ ip: `192.0.2.${p + 1}`, port: 40000 + k, last_seen_ms: BASE + 1000 * (p + 1) }],
              metadata: { page: String(p) },
            }),
          ),
        )
        for (const incoming of pages) await mergeBatch(d, 'seq', incoming, 0, 7)
        const group = (slice: Aggregate[][]) =>
          mergeGroup(
            d,
            slice.map((incoming) => ({ instanceId: 'grp', incoming })),
            0,
            7,
          )
        await group(pages.slice(0, 2))
        await Promise.all([group(pages.slice(2, 5)), group(pages.slice(5))])
        const rows = async (id: string) => (await stored(d, id)).map((r) => ({ ...r, instance_id: undefined }))
        const grouped = await rows('grp')
        assert.equal(grouped.length, 80)
        assert.deepEqual(grouped, await rows('seq'))
      } finally {
        await d.close()
      }
    })
  })
}

describe('observation group statements, values PostgreSQL refuses (postgres)', () => {
  // As when each value was bound on its own: the statement fails, nothing is stored.
  for (const [name, over] of [
    ['a NUL in a text column', { fingerprint: 'nul\u0000inside' }],
    ['a fractional count', { count: 1.5 }],
    ['a count that is not a number', { count: Number.NaN }],
    ['a millisecond value beyond bigint', { last_seen_ms: 1e21 }],
  ] as const) {
    test(name, async () => {
      const d = await openEdgeDatabase(await newDatabase('postgres', pg.get))
      try {
        const rows = [aggregate('a'), { ...aggregate('b'), ...over }]
        await assert.rejects(mergeGroup(d, [{ instanceId: 'x', incoming: rows }], 0, 1))
        assert.deepEqual(await stored(d, 'x'), [])
      } finally {
        await d.close()
      }
    })
  }

  // (Key columns cannot hold one: the wire schema's patterns refuse it.)
  test('a lone surrogate in a text column is stored as U+FFFD, as its UTF-8 encoding always did', async () => {
    const d = await openEdgeDatabase(await newDatabase('postgres', pg.get))
    try {
      const a = aggregate('a', { reported_status: 'x\udc00 \ud800' })
      await mergeGroup(d, [{ instanceId: 'x', incoming: [a] }], 0, 1)
      const [row] = await stored(d, 'x')
      assert.equal(row!.reported_status, 'x\ufffd \ufffd')
    } finally {
      await d.close()
    }
  })
})

describe('observation group statements, a concurrent insert (postgres)', () => {
  // mergePages reads the stored rows first on PostgreSQL and inserts only what it did not find.
  test('a fingerprint another transaction stores between the read and the insert is merged, not lost', async () => {
    const d = await openEdgeDatabase(await newDatabase('postgres', pg.get))
    try {
      const first = aggregate('raced', { count: 5, ips: ['192.0.2.7'], ports: [22], last_seen_ms: BASE + 500 })
      const second = aggregate('raced', { count: 9, ips: ['192.0.2.8'], ports: [2222], last_seen_ms: BASE + 900 })
      // Another transaction inserts the fingerprint and holds its commit until the merge waits on it.
      let inserted!: () => void
      const insertedNow = new Promise<void>((resolve) => (inserted = resolve))
      let release!: () => void
      const held = new Promise<void>((resolve) => (release = resolve))
      const other = d.db.transaction().execute(async (trx) => {
        await trx
          .insertInto('fingerprints')
          .values(toRow('x', first, 1))
          .execute()
        inserted()
        await held
      })
      await insertedNow
      const merging = mergeBatch(d, 'x', [second, aggregate('fresh')], 0, 2)
      // The merge read nothing stored and its insert now waits for the other transaction.
      await waitFor('the merge to wait for the other transaction', async () => {
        const r = await sql<{ n: number }>`select count(*)::int as n from pg_locks where not granted`.execute(d.db)
        return r.rows[0]!.n > 0
      })
      release()
      await other
      await merging
      assert.deepEqual(await stored(d, 'x'), [
        { ...toRow('x', aggregate('fresh'), 2), oldest_sighting_ms: BASE + 1000 },
        { ...toRow('x', mergeAggregates(first, second, 0), 2), oldest_sighting_ms: BASE + 1000 },
      ])
    } finally {
      await d.close()
    }
  })
})

describe('observation group read, its prepared plan (postgres)', () => {
  // The read runs as a prepared statement, whose generic plan PostgreSQL keeps until the next
  // ANALYZE: planned on a young table, it must still go by key once the table has grown.
  test('the lock read goes by primary key in the generic plan made on an empty table', async () => {
    const d = await openEdgeDatabase(await newDatabase('postgres', pg.get))
    try {
      const name = preparedName(PG_LOCK)
      assert.ok(name, 'the lock read is registered to run prepared')
      const keys = (ids: string[]) => ids.map((id) => `\u0001${id}`).join('')
      const plan = await d.db.transaction().execute(async (trx) => {
        // Past the five custom plans, on one connection (the transaction's), a group's worth of keys.
        const many = Array.from({ length: 128 }, (_, i) => `fp-${i}`)
        for (let i = 0; i < 7; i++) {
          const { rows } = await trx.executeQuery(
            CompiledQuery.raw(PG_LOCK, [keys(many.map(() => 'instance')), keys(many)]),
          )
          assert.deepEqual(rows, [])
        }
        const { rows } = await trx.executeQuery<{ generic_plans: number }>(
          CompiledQuery.raw('select generic_plans from pg_prepared_statements where name = $1', [name]),
        )
        assert.ok(Number(rows[0]?.generic_plans) >= 1, 'a generic plan is in use')
        const explained = await trx.executeQuery<{ 'QUERY PLAN': string }>(
          CompiledQuery.raw(`explain execute ${name}(chr(1) || 'a', chr(1) || 'x')`, []),
        )
        return explained.rows.map((r) => r['QUERY PLAN']).join('\n')
      })
      assert.match(plan, /Index Scan using fingerprints_pk on fingerprints/)
      assert.doesNotMatch(plan, /Seq Scan on fingerprints|Hash Join/)
    } finally {
      await d.close()
    }
  })
})
