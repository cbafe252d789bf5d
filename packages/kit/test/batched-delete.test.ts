import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { type Postgres, startPostgres, tempDir } from '@gatehouse/testkit'
import { type Generated, sql } from 'kysely'
import { type Database, deleteBefore, firstIdFrom, openDatabase } from '../src/index.ts'

interface DB {
  // A composite key and no integer id: rows are picked by physical address.
  events: { node: string; seq: number; observed_ms: number; note: Generated<string | null> }
}

const dir = tempDir('kit-batched-delete-')
let pg: Postgres | undefined
let files = 0
after(async () => {
  await pg?.stop()
  dir.remove()
})

const backends = [
  { kind: 'sqlite', url: async () => `sqlite:${dir.path}/events-${++files}.db` },
  {
    kind: 'postgres',
    url: async () => {
      pg ??= await startPostgres()
      return pg.createDatabase()
    },
  },
] as const

for (const backend of backends) {
  describe(`deleteBefore (${backend.kind})`, () => {
    test('deletes every row below the cutoff and nothing else, a batch at a time, yielding between', async (t) => {
      const d: Database<DB> = await openDatabase<DB>({ url: await backend.url() })
      t.after(() => d.close())
      await sql`create table events (node text not null, seq integer not null, observed_ms bigint not null, note text, primary key (node, seq))`.execute(
        d.db,
      )
      await sql`create index events_observed on events (observed_ms)`.execute(d.db)
      // Distinct times, and a thousand rows at one time: more ties than a batch holds.
      const rows = Array.from({ length: 5000 }, (_, i) => ({
        node: `n${i % 7}`,
        seq: i,
        observed_ms: i < 1000 ? 0 : (i * 7919) % 10_000,
      }))
      for (let i = 0; i < rows.length; i += 500)
        await d.db
          .insertInto('events')
          .values(rows.slice(i, i + 500))
          .execute()
      const cutoff = 6000
      const old = rows.filter((r) => r.observed_ms < cutoff).length

      // Something queued before the call runs before it ends: the batches yield to the event loop.
      const order: string[] = []
      setImmediate(() => order.push('other work'))
      const removed = await deleteBefore(d.db, 'events', 'observed_ms', cutoff, 400)
      order.push('deleted')
      assert.deepEqual(order, ['other work', 'deleted'])
      assert.equal(removed, old)
      const left = await d.db.selectFrom('events').select(['seq', 'observed_ms']).orderBy('seq').execute()
      assert.deepEqual(
        left.map((r) => Number(r.seq)),
        rows.filter((r) => r.observed_ms >= cutoff).map((r) => r.seq),
      )
      // Nothing older left: a second pass removes nothing; an exact multiple of the batch ends too.
      assert.equal(await deleteBefore(d.db, 'events', 'observed_ms', cutoff, 400), 0)
      const exact = left.filter((r) => Number(r.observed_ms) < 6800).length
      assert.equal(await deleteBefore(d.db, 'events', 'observed_ms', 6800, exact), exact)
    })

    test('a pass with nothing due writes nothing, so it succeeds on a database that refuses writes', async (t) => {
      const url = await backend.url()
      const setup = await openDatabase<DB>({ url })
      await sql`create table events (node text not null, seq integer not null, observed_ms bigint not null, note text, primary key (node, seq))`.execute(
        setup.db,
      )
      await setup.db.insertInto('events').values({ node: 'n', seq: 1, observed_ms: 500 }).execute()
      if (backend.kind === 'postgres')
        await sql`alter database ${sql.id(new URL(url).pathname.slice(1))} set default_transaction_read_only = on`.execute(
          setup.db,
        )
      await setup.close()
      const d = await openDatabase<DB>({ url })
      t.after(() => d.close())
      if (backend.kind === 'sqlite') await sql`pragma query_only = 1`.execute(d.db)
      assert.equal(await deleteBefore(d.db, 'events', 'observed_ms', 500), 0)
      // Something due: the delete is tried, and the refusal reaches the caller.
      await assert.rejects(deleteBefore(d.db, 'events', 'observed_ms', 501), /read-only|readonly/)
    })

    test('firstIdFrom: the first id of a log at or after a time, by a column without an index', async (t) => {
      const d = await openDatabase<{ log: { id: Generated<number>; at: string } }>({ url: await backend.url() })
      t.after(() => d.close())
      const serial = backend.kind === 'postgres' ? 'bigserial primary key' : 'integer primary key autoincrement'
      await sql`create table log (id ${sql.raw(serial)}, at text not null)`.execute(d.db)
      const at = (day: number) => `2026-11-${String(day).padStart(2, '0')}T00:00:00.000Z`
      await d.db
        .insertInto('log')
        .values(Array.from({ length: 20 }, (_, i) => ({ at: at(i + 1) })))
        .execute()
      assert.equal(await firstIdFrom(d.db, 'log', 'at', at(15)), 15)
      assert.equal(await firstIdFrom(d.db, 'log', 'at', '2026-11-14T12:00:00.000Z'), 15)
      assert.equal(await firstIdFrom(d.db, 'log', 'at', at(1)), 1)
      assert.equal(await firstIdFrom(d.db, 'log', 'at', at(21)), undefined)
      assert.equal(await deleteBefore(d.db, 'log', 'id', (await firstIdFrom(d.db, 'log', 'at', at(15)))!), 14)
    })
  })
}
