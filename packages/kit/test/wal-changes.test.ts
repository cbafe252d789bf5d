import assert from 'node:assert/strict'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { test } from 'node:test'
import { tempDir } from '@gatehouse/testkit'
import { memoUntilChange, WalChanges } from '../src/db/wal-changes.ts'

function database(t: { after: (fn: () => unknown) => void }) {
  const dir = tempDir('wal-changes-')
  const path = join(dir.path, 'db.sqlite')
  const db = new DatabaseSync(path)
  db.exec('PRAGMA journal_mode = WAL')
  db.exec('create table t (k text primary key, v text)')
  t.after(() => {
    db.close()
    dir.remove()
  })
  return { path, db }
}

test('WalChanges: a commit by this or another connection moves the header; reads do not', (t) => {
  const { path, db } = database(t)
  const changes = new WalChanges(path)
  t.after(() => changes.close())
  assert.equal(changes.changed(), true, 'the first look knows nothing')
  assert.equal(changes.changed(), false)
  db.prepare('select * from t').all()
  assert.equal(changes.changed(), false)
  db.prepare('insert into t values (?, ?)').run('a', '1')
  assert.equal(changes.changed(), true)
  assert.equal(changes.changed(), false)
  const other = new DatabaseSync(path)
  other.prepare('update t set v = ? where k = ?').run('2', 'a')
  assert.equal(changes.changed(), true)
  // A rolled-back transaction commits nothing.
  other.exec('begin immediate')
  other.prepare('update t set v = ? where k = ?').run('3', 'a')
  other.exec('rollback')
  assert.equal(changes.changed(), false)
  // A checkpoint that restarts the log, then a commit at its start, is still a change.
  other.exec('PRAGMA wal_checkpoint(RESTART)')
  changes.changed()
  other.prepare('update t set v = ? where k = ?').run('4', 'a')
  assert.equal(changes.changed(), true)
  other.close()
})

test('WalChanges: without a -shm file every look is a change', () => {
  const changes = new WalChanges('/nonexistent/db.sqlite')
  assert.equal(changes.changed(), true)
  assert.equal(changes.changed(), true)
})

test('memoUntilChange: remembers until a commit, and keeps no value a concurrent change may have outdated', async (t) => {
  const { path, db } = database(t)
  db.prepare('insert into t values (?, ?)').run('a', '1')
  const changes = new WalChanges(path)
  t.after(() => changes.close())
  let reads = 0
  let hold: Promise<void> | undefined
  const get = db.prepare('select v from t where k = ?')
  const read = async (k: string) => {
    reads++
    const row = get.get(k) as { v: string } | undefined
    if (hold) await hold
    return row?.v
  }
  const lookup = memoUntilChange(changes, read)
  assert.equal(await lookup('a'), '1')
  assert.equal(await lookup('a'), '1')
  assert.equal(await lookup('missing'), undefined)
  assert.equal(await lookup('missing'), undefined, 'an absent row is remembered too')
  assert.equal(reads, 2)
  db.prepare('update t set v = ? where k = ?').run('2', 'a')
  assert.equal(await lookup('a'), '2')
  assert.equal(reads, 3)
  // A read that straddles a change another lookup saw is answered but not kept.
  let release!: () => void
  hold = new Promise((r) => (release = r))
  db.prepare('update t set v = ? where k = ?').run('3', 'a')
  const slow = lookup('a') // sees the change, reads '3', waits
  db.prepare('update t set v = ? where k = ?').run('4', 'a')
  hold = undefined
  assert.equal(await lookup('a'), '4') // sees the next change
  release()
  assert.equal(await slow, '3')
  assert.equal(await lookup('a'), '4', 'the slow, older answer was not kept')
})
