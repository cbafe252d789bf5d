import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { NodeSqliteDatabase } from '../src/index.ts'

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

  test('close is idempotent', () => {
    const db = new NodeSqliteDatabase(join(dir, 'close.db'))
    db.close()
    db.close()
    assert.equal(db.raw.isOpen, false)
  })
})
