import assert from 'node:assert/strict'
import { existsSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { tempDir } from '@gatehouse/testkit'
import { mkdirPrivate, openDatabase, sql } from '../src/index.ts'
import { mkdirPrivateSync } from '../src/private-files.ts'

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

  test('nested folders are each 0700; a place where none can be made fails at once, naming why', async () => {
    const deep = join(dir.path, 'a', 'b', 'c')
    await mkdirPrivate(deep)
    mkdirPrivateSync(join(deep, 'd', 'e'))
    for (const p of ['a', 'a/b', 'a/b/c', 'a/b/c/d', 'a/b/c/d/e']) assert.equal(mode(join(dir.path, p)), 0o700, p)
    // Two at once: the one that loses the race finds a folder there.
    await Promise.all([mkdirPrivate(join(dir.path, 'x', 'y')), mkdirPrivate(join(dir.path, 'x', 'y'))])
    // /proc answers ENOENT to mkdir in a folder that exists: Node's recursive mkdir never
    // returned there (and, sync, blocked the process).
    await assert.rejects(mkdirPrivate('/proc/self/gatehouse/x'), { code: 'ENOENT' })
    assert.throws(() => mkdirPrivateSync('/proc/self/gatehouse/x'), { code: 'ENOENT' })
    writeFileSync(join(dir.path, 'file'), '')
    const below = join(dir.path, 'file', 'sub', 'x')
    await assert.rejects(mkdirPrivate(below), {
      code: 'ENOTDIR',
      message: `${join(dir.path, 'file')} is a file, not a folder`,
    })
    assert.throws(() => mkdirPrivateSync(join(dir.path, 'file')), { message: /is a file, not a folder/ })
  })
})
