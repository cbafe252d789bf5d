import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { after, describe, test } from 'node:test'
import { type Postgres, startPostgres } from '@gatehouse/testkit'
import type { Kysely } from 'kysely'
import { type Database, GroupCommitQueue, isDatabaseUnavailable, openDatabase } from '../src/index.ts'

interface DB {
  entry: { id: number; name: string }
}

const dir = mkdtempSync(join(tmpdir(), 'kit-group-commit-'))
let pg: Postgres | undefined
let files = 0
after(async () => {
  await pg?.stop()
  rmSync(dir, { recursive: true, force: true })
})

const migrations = {
  '0001_entry': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('entry')
        .addColumn('id', 'integer', (c) => c.primaryKey())
        .addColumn('name', 'varchar(50)', (c) => c.notNull().unique())
        .execute()
    },
  },
}

const backends = [
  { kind: 'sqlite', url: async () => `sqlite:${join(dir, `entries-${++files}.db`)}` },
  {
    kind: 'postgres',
    url: async () => {
      pg ??= await startPostgres()
      return pg.createDatabase()
    },
  },
] as const

/** A queue that inserts entries and records how each commit was made. */
function entryQueue(database: Database<DB>, maxGroup: number) {
  const groups: number[][] = []
  const ones: number[] = []
  const queue = new GroupCommitQueue<{ id: number; name: string }, number>({
    maxGroup,
    commitGroup: (items) => {
      groups.push(items.map((i) => i.id))
      return database.db.transaction().execute(async (trx) => {
        for (const item of items) await trx.insertInto('entry').values(item).execute()
        return items.map((i) => i.id * 10)
      })
    },
    commitOne: async (item) => {
      ones.push(item.id)
      await database.db.insertInto('entry').values(item).execute()
      return item.id * 10
    },
  })
  return { queue, groups, ones }
}

for (const backend of backends) {
  describe(`group commit (${backend.kind})`, () => {
    test('items added in one turn share a transaction; each gets its own result after commit', async () => {
      const database = await openDatabase<DB>({ url: await backend.url(), migrations })
      try {
        const { queue, groups, ones } = entryQueue(database, 4)
        const results = await Promise.all([1, 2, 3, 4, 5, 6].map((id) => queue.add({ id, name: `n${id}` })))
        assert.deepEqual(results, [10, 20, 30, 40, 50, 60])
        // Six items, at most four a group: one group of four, then the remaining two.
        assert.deepEqual(groups, [
          [1, 2, 3, 4],
          [5, 6],
        ])
        assert.deepEqual(ones, [])
        const stored = await database.db.selectFrom('entry').select('id').orderBy('id').execute()
        assert.deepEqual(
          stored.map((r) => Number(r.id)),
          [1, 2, 3, 4, 5, 6],
        )
        // A lone item is committed on its own, and items of a later turn form a new group.
        assert.equal(await queue.add({ id: 7, name: 'n7' }), 70)
        assert.deepEqual(ones, [7])
      } finally {
        await database.close()
      }
    })

    test('a bad item fails alone: the group rolls back and every other item is stored', async () => {
      const database = await openDatabase<DB>({ url: await backend.url(), migrations })
      try {
        await database.db.insertInto('entry').values({ id: 100, name: 'taken' }).execute()
        const { queue, groups, ones } = entryQueue(database, 64)
        const outcomes = await Promise.allSettled([
          queue.add({ id: 1, name: 'a' }),
          queue.add({ id: 2, name: 'taken' }),
          queue.add({ id: 3, name: 'c' }),
        ])
        assert.deepEqual(
          outcomes.map((o) => o.status),
          ['fulfilled', 'rejected', 'fulfilled'],
        )
        assert.deepEqual(groups, [[1, 2, 3]])
        assert.deepEqual(ones, [1, 2, 3])
        const names = await database.db.selectFrom('entry').select('name').orderBy('id').execute()
        assert.deepEqual(
          names.map((r) => r.name),
          ['a', 'c', 'taken'],
        )
        assert.equal(queue.waiting, 0)
      } finally {
        await database.close()
      }
    })

    test('an unavailable database fails the group at once: no item is retried alone', async () => {
      const url = await backend.url()
      const database = await openDatabase<DB>({ url, migrations })
      // SQLite: another connection holds the write lock past the busy timeout (5 s);
      // PostgreSQL: the server is down.
      let holder: DatabaseSync | undefined
      try {
        const { queue, groups, ones } = entryQueue(database, 64)
        if (backend.kind === 'sqlite') {
          holder = new DatabaseSync(url.slice('sqlite:'.length))
          holder.exec('begin immediate')
        } else await pg!.halt()
        const outcomes = await Promise.allSettled([1, 2, 3].map((id) => queue.add({ id, name: `n${id}` })))
        assert.deepEqual(groups, [[1, 2, 3]])
        // Retrying each alone would only repeat the failure (on SQLite, each after another wait).
        assert.deepEqual(ones, [])
        for (const o of outcomes) {
          assert.equal(o.status, 'rejected')
          assert.ok(isDatabaseUnavailable((o as PromiseRejectedResult).reason))
        }
      } finally {
        if (holder) {
          holder.exec('rollback')
          holder.close()
        } else if (backend.kind === 'postgres') await pg!.resume()
      }
      try {
        // Back: the queue commits again.
        const { queue } = entryQueue(database, 64)
        assert.deepEqual(
          await Promise.all([queue.add({ id: 4, name: 'n4' }), queue.add({ id: 5, name: 'n5' })]),
          [40, 50],
        )
      } finally {
        await database.close()
      }
    })
  })
}

test('at most maxInFlight groups commit at once; what arrives meanwhile forms the next group', async () => {
  let inFlight = 0
  let most = 0
  const groups: number[][] = []
  const release: Array<() => void> = []
  const sizes: number[] = []
  const queue = new GroupCommitQueue<number, number>({
    maxGroup: 100,
    maxInFlight: 2,
    onGroup: (size) => sizes.push(size),
    commitGroup: async (items) => {
      groups.push(items)
      most = Math.max(most, ++inFlight)
      await new Promise<void>((r) => release.push(r))
      inFlight--
      return items.map((i) => -i)
    },
    commitOne: (item) => -item,
  })
  const turn = () => new Promise((r) => setImmediate(r))
  const all: Array<Promise<number>> = []
  for (const batch of [
    [1, 2],
    [3, 4],
    [5, 6],
    [7, 8],
  ]) {
    all.push(...batch.map((i) => queue.add(i)))
    await turn()
  }
  // Two groups are being committed; the items of the last two turns wait together.
  assert.deepEqual(groups, [
    [1, 2],
    [3, 4],
  ])
  assert.equal(queue.waiting, 4)
  while (groups.length < 3 || release.length > 0) {
    release.shift()?.()
    await turn()
  }
  assert.deepEqual(await Promise.all(all), [-1, -2, -3, -4, -5, -6, -7, -8])
  assert.deepEqual(groups[2], [5, 6, 7, 8])
  assert.equal(most, 2)
  // Every group's size, as it started; then a lone item is a group of one.
  assert.deepEqual(sizes, [2, 2, 4])
  await queue.add(9)
  assert.deepEqual(sizes, [2, 2, 4, 1])
})

test('a queue needs a group size of at least one', () => {
  assert.throws(
    () => new GroupCommitQueue({ maxGroup: 0, commitGroup: () => [], commitOne: () => 0 }),
    /maxGroup must be at least 1/,
  )
})
