/**
 * `<app> backup FILE` (cli/backup.ts): a copy of a database another process keeps writing is one
 * committed state and opens on its own; it is owner-only, never written over an existing file,
 * and a failed copy leaves nothing behind. PostgreSQL is refused with what to use instead.
 */
import assert from 'node:assert/strict'
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { after, test } from 'node:test'
import { mountFailingDisk, mountSmallDisk, startPostgres, tempDir, waitFor } from '@gatehouse/testkit'
import { backupDatabase } from '../src/cli/backup.ts'
import { CliError } from '../src/cli/program.ts'
import { openDatabase } from '../src/db/database.ts'

const dir = tempDir('kit-backup-')
after(() => dir.remove())

/** A process that writes pairs of rows, one transaction per pair, until killed. */
function pairWriter(file: string): ChildProcess {
  const code = `
    const { DatabaseSync } = require('node:sqlite')
    const db = new DatabaseSync(${JSON.stringify(file)})
    db.exec('pragma journal_mode = wal; pragma busy_timeout = 5000')
    const insert = db.prepare("insert into pairs (half, pad) values (?, randomblob(200))")
    process.stdout.write('writing\\n')
    for (;;) {
      db.exec('begin immediate')
      insert.run(1)
      insert.run(2)
      db.exec('commit')
    }`
  return spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] })
}

const failed = (pattern: RegExp) => (err: unknown) => {
  assert.ok(err instanceof CliError, String(err))
  assert.match(err.message, pattern)
  return true
}

test('a copy taken while another process writes is one committed state, owner-only, and opens on its own', async (t) => {
  const file = join(dir.path, 'live.db')
  const setup = new DatabaseSync(file)
  setup.exec('pragma journal_mode = wal; create table pairs (id integer primary key, half integer, pad blob)')
  setup.close()
  const writer = pairWriter(file)
  t.after(() => writer.kill('SIGKILL'))
  let said = ''
  writer.stdout!.on('data', (d) => {
    said += d
  })
  await waitFor('the writer to start', () => said.includes('writing'))
  const d = await openDatabase({ url: `sqlite:${file}`, readsOnly: true })
  t.after(() => d.close())
  await waitFor('some rows', () => Number(d.sqlite!.prepare('select count(*) as n from pairs').get()!.n) > 2000)

  const targets = [1, 2, 3].map((i) => join(dir.path, `copy-${i}.db`))
  for (const target of targets) {
    assert.match(backupDatabase(d, target), new RegExp(`^backed up to ${target} \\(\\d+\\.\\d MiB, checked\\)$`))
  }
  writer.kill('SIGKILL')
  await once(writer, 'exit')
  const counts: number[] = []
  for (const target of targets) {
    assert.equal(statSync(target).mode & 0o777, 0o600)
    assert.ok(!existsSync(`${target}-wal`), 'no write-ahead log beside the copy')
    const copy = new DatabaseSync(target, { readOnly: true })
    const { n, halves } = copy.prepare('select count(*) as n, sum(half) as halves from pairs').get() as {
      n: number
      halves: number
    }
    copy.close()
    // Every pair whole: a copy torn inside a transaction would hold a lone first half.
    assert.equal(n % 2, 0)
    assert.equal(halves, (n / 2) * 3)
    counts.push(n)
  }
  assert.ok(counts[2]! > counts[0]!, `the writer went on between the copies (${counts.join(', ')})`)
})

test('an existing file is never written over; a missing folder is one line', async () => {
  const d = await openDatabase({ url: `sqlite:${join(dir.path, 'small.db')}` })
  try {
    const existing = join(dir.path, 'existing.db')
    writeFileSync(existing, 'keep me')
    assert.throws(() => backupDatabase(d, existing), failed(/^.*existing\.db exists; back up to a new file$/))
    assert.equal(readFileSync(existing, 'utf8'), 'keep me')
    assert.throws(
      () => backupDatabase(d, join(dir.path, 'no', 'such', 'folder.db')),
      failed(/^cannot create .*folder\.db: ENOENT/),
    )
  } finally {
    await d.close()
  }
})

test('a copy that does not fit on its disk fails in one line and leaves nothing', async (t) => {
  const disk = mountSmallDisk('kit-backup-full-', 1)
  t.after(() => disk.remove())
  const d = await openDatabase({ url: `sqlite:${join(dir.path, 'big.db')}` })
  t.after(() => d.close())
  d.sqlite!.exec('create table blobs (b blob)')
  for (let i = 0; i < 40; i++) d.sqlite!.prepare('insert into blobs values (randomblob(100000))').run()
  const target = join(disk.path, 'copy.db')
  assert.throws(() => backupDatabase(d, target), failed(/^backup to .*copy\.db failed, nothing kept: .*full/))
  assert.ok(!existsSync(target))
})

// The bad day a backup is for: the disk failed and the kernel turned it read-only under the
// running server. The database opens read-only (kit db) and can still be copied elsewhere.
test('a database on a disk that failed under its server can still be copied to another disk', async (t) => {
  const disk = mountFailingDisk('kit-backup-failing-')
  t.after(() => disk.remove())
  const url = `sqlite:${join(disk.path, 'a.db')}`
  const server = await openDatabase({ url })
  t.after(() => server.close())
  server.sqlite!.exec("create table notes (text text); insert into notes values ('committed before the error')")
  disk.fail()
  assert.throws(() => server.sqlite!.exec("insert into notes values ('after')"))
  const reader = await openDatabase({ url, create: false, readsOnly: true })
  t.after(() => reader.close())
  assert.equal(reader.readOnly, true)
  const target = join(dir.path, 'rescued.db')
  assert.match(backupDatabase(reader, target), /^backed up to .*rescued\.db/)
  const copy = new DatabaseSync(target, { readOnly: true })
  assert.deepEqual(
    copy
      .prepare('select text from notes')
      .all()
      .map((r) => r.text),
    ['committed before the error'],
  )
  copy.close()
})

test('a PostgreSQL database is refused, naming pg_dump', async (t) => {
  const pg = await startPostgres()
  t.after(() => pg.stop())
  const d = await openDatabase({ url: await pg.createDatabase() })
  t.after(() => d.close())
  const target = join(dir.path, 'pg.db')
  assert.throws(
    () => backupDatabase(d, target),
    failed(/^backup copies a SQLite database; for PostgreSQL use pg_dump$/),
  )
  assert.ok(!existsSync(target))
})
