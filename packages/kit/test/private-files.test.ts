import assert from 'node:assert/strict'
import { existsSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { tempDir } from '@gatehouse/testkit'
import { mkdirPrivate, openDatabase, sql } from '../src/index.ts'

const mode = (path: string) => statSync(path).mode & 0o777

describe('owner-only state files', () => {
  const dir = tempDir('kit-private-')
  let umask: number
  // The usual umask, which made databases 0644 and folders 0755 before.
  before(() => {
    umask = process.umask(0o022)
  })
  after(() => {
    process.umask(umask)
    dir.remove()
  })

  test('a new SQLite database is 0600 in a new 0700 folder, and so are its WAL files', async () => {
    const file = join(dir.path, 'state', 'nested', 'app.db')
    const db = await openDatabase({ url: `sqlite:${file}`, migrations: {} })
    try {
      await sql`create table t (x integer)`.execute(db.db)
      await sql`insert into t values (1)`.execute(db.db)
      assert.equal(mode(file), 0o600)
      assert.equal(mode(join(dir.path, 'state')), 0o700)
      assert.equal(mode(join(dir.path, 'state', 'nested')), 0o700)
      for (const side of [`${file}-wal`, `${file}-shm`]) if (existsSync(side)) assert.equal(mode(side), 0o600, side)
      assert.ok(existsSync(`${file}-wal`), 'the database runs in WAL mode')
    } finally {
      await db.close()
    }
  })

  test('an existing folder keeps its mode', async () => {
    await mkdirPrivate(join(dir.path, 'kept'))
    assert.equal(mode(join(dir.path, 'kept')), 0o700)
    assert.equal(mode(dir.path) & 0o700, 0o700)
    const before = mode(dir.path)
    await mkdirPrivate(dir.path)
    assert.equal(mode(dir.path), before)
  })
})
