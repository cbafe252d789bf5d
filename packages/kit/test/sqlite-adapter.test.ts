import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { type Generated, sql } from 'kysely'
import { NodeSqliteDatabase, openDatabase } from '../src/index.ts'

const dir = mkdtempSync(join(tmpdir(), 'kit-sqlite-'))
after(() => rmSync(dir, { recursive: true, force: true }))

describe('NodeSqliteDatabase', () => {
  test('caches prepared statements and evicts the least recently used beyond 256', () => {
    const db = new NodeSqliteDatabase(join(dir, 'cache.db'))
    after(() => db.close())
    const first = db.prepare('select 0 as n')
    assert.equal(db.prepare('select 0 as n'), first, 'same SQL, same statement')
    for (let i = 1; i <= 300; i++) {
      db.prepare(`select ${i} as n`)
      // Keep the first statement recent so it survives eviction.
      if (i % 100 === 0) db.prepare('select 0 as n')
    }
    assert.equal(db.prepare('select 0 as n'), first, 'recently used statements stay cached')
    const evicted = db.prepare('select 1 as n')
    assert.deepEqual(evicted.all([]), [{ n: 1 }], 'an evicted statement is prepared again')
  })

  test('reader statements return plain rows; writers report changes', () => {
    const db = new NodeSqliteDatabase(join(dir, 'rw.db'))
    after(() => db.close())
    db.raw.exec('create table t (id integer primary key, v text, b integer, d text)')
    const insert = db.prepare('insert into t (v, b, d) values (?, ?, ?)')
    assert.equal(insert.reader, false)
    const r = insert.run(['a', true, new Date('2026-01-02T03:04:05.678Z')])
    assert.equal(r.changes, 1)
    assert.equal(r.lastInsertRowid, 1)
    insert.run([undefined, false, null])
    const select = db.prepare('select * from t order by id')
    assert.equal(select.reader, true)
    const rows = select.all([])
    assert.deepEqual(rows, [
      { id: 1, v: 'a', b: 1, d: '2026-01-02T03:04:05.678Z' },
      { id: 2, v: null, b: 0, d: null },
    ])
    assert.equal(Object.getPrototypeOf(rows[0]), Object.prototype)
    assert.deepEqual([...select.iterate([])], rows)
    assert.equal(db.prepare('insert into t (v) values (?) returning id').reader, true)
  })

  test('an INSERT … RETURNING whose commit fails throws and returns no row, on every kit path', async () => {
    // A deferred foreign key is checked at commit, like the write of a full disk (node:sqlite's
    // get() dropped both: it returned an id for a row that was rolled back).
    const file = join(dir, 'returning.db')
    const setup = new NodeSqliteDatabase(file)
    setup.raw.exec(`create table parent (id integer primary key);
      create table child (id integer primary key, parent_id integer references parent(id) deferrable initially deferred)`)
    setup.close()
    const d = await openDatabase<{ child: { id: Generated<number>; parent_id: number } }>({ url: `sqlite:${file}` })
    after(() => d.close())
    const sql = 'insert into child (parent_id) values (?) returning id'
    const failsOnCommit = (err: unknown) => /FOREIGN KEY constraint failed/.test((err as Error).message)
    const raw = new NodeSqliteDatabase(join(dir, 'returning.db'))
    after(() => raw.close())
    assert.throws(() => raw.prepareKept(sql).first([99]), failsOnCommit)
    const insert = d.prepare(d.db.insertInto('child').values({ parent_id: 0 }).returning('id'))
    await assert.rejects(insert.first(99), failsOnCommit)
    await assert.rejects(
      d.db.insertInto('child').values({ parent_id: 99 }).returning('id').executeTakeFirst(),
      failsOnCommit,
    )
    await assert.rejects(
      d.transactionSync!((tx) => tx.first(insert, 99)),
      failsOnCommit,
    )
    assert.deepEqual(await d.db.selectFrom('child').selectAll().execute(), [])
    // A commit that succeeds still returns its row, and a plain read still takes only the first.
    raw.raw.exec('insert into parent (id) values (1), (2)')
    assert.deepEqual(await insert.first(1), { id: 1 })
    assert.deepEqual(raw.prepareKept('select id from parent order by id').first([]), { id: 1 })
  })

  test('a transaction SQLite ended itself fails with the error that ended it, and the connection goes on', async () => {
    // A full disk, an I/O error or memory running out make SQLite roll back the whole transaction;
    // Kysely then asks for a ROLLBACK, which used to fail with "no transaction is active" and hide
    // the disk-full error (a gate dropped its observations for it instead of keeping them).
    const d = await openDatabase<{ t: { id: Generated<number>; v: string } }>({
      url: `sqlite:${join(dir, 'ended.db')}`,
    })
    after(() => d.close())
    await sql`create table t (id integer primary key, v text not null)`.execute(d.db)
    const ended = Object.assign(new Error('database or disk is full'), { code: 'ERR_SQLITE_ERROR', errcode: 13 })
    await assert.rejects(
      d.db.transaction().execute(async (trx) => {
        await trx.insertInto('t').values({ v: 'rolled back' }).execute()
        await sql`rollback`.execute(trx)
        throw ended
      }),
      (err) => err === ended,
    )
    await d.db.insertInto('t').values({ v: 'after' }).execute()
    await d.db.transaction().execute((trx) => trx.insertInto('t').values({ v: 'in a transaction' }).execute())
    assert.deepEqual(
      (await d.db.selectFrom('t').select('v').orderBy('id').execute()).map((r) => r.v),
      ['after', 'in a transaction'],
    )
  })

  test('close is idempotent', () => {
    const db = new NodeSqliteDatabase(join(dir, 'close.db'))
    db.close()
    db.close()
    assert.equal(db.raw.isOpen, false)
  })
})
