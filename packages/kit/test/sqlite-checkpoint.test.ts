/**
 * SQLite checkpoints on a worker thread (`backgroundCheckpoints`): the serving connection stops
 * checkpointing on commit, the worker copies the log meanwhile, an oversized log is emptied
 * between two transactions, and nothing written is lost.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { after, describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { waitFor } from '@gatehouse/testkit'
import { ConnectionLock } from '../src/db/sqlite-adapter.ts'
import { startBackgroundCheckpoints } from '../src/db/sqlite-checkpoint.ts'
import { openDatabase, sql } from '../src/index.ts'

const dir = mkdtempSync(join(tmpdir(), 'kit-checkpoint-'))
after(() => rmSync(dir, { recursive: true, force: true }))
let files = 0

/** Polls `check` every 20 ms for up to 10 s. */
/**
 * The log's frame count and how many are copied into the database file, read from the wal-index
 * (`-shm`, https://sqlite.org/walformat.html: `mxFrame` at byte 16 of its header, `nBackfill` at
 * byte 96), without checkpointing as `pragma wal_checkpoint` would.
 */
function walIndex(path: string) {
  const shm = readFileSync(`${path}-shm`).subarray(0, 100)
  return { frames: shm.readUInt32LE(16), backfilled: shm.readUInt32LE(96) }
}

/** A fresh database file in WAL mode with a table `t`, on a connection of its own. */
function walTable() {
  const path = join(dir, `t${files++}.db`)
  const raw = new DatabaseSync(path)
  raw.exec('pragma journal_mode = wal')
  raw.exec('create table t (id integer primary key, v text)')
  return { path, raw }
}

/** What the serving connection was told to run, by the connection (servingSide). */
const servingExecs = new WeakMap<DatabaseSync, string[]>()

/** `raw` as startBackgroundCheckpoints sees it, recording the statements it runs on it. */
function servingSide(raw: DatabaseSync): DatabaseSync {
  const execs: string[] = []
  servingExecs.set(raw, execs)
  return new Proxy(raw, {
    get(target, key) {
      if (key === 'exec')
        return (text: string) => {
          execs.push(text)
          return target.exec(text)
        }
      const value = Reflect.get(target, key, target)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}

/** A connection's lock, counting who asks for it (the test itself and the catch-ups). */
function countingLock() {
  const inner = new ConnectionLock()
  const lock = {
    asked: 0,
    acquire: () => {
      lock.asked++
      return inner.acquire()
    },
    release: () => inner.release(),
  }
  return lock
}

const walBytes = (path: string) => (existsSync(`${path}-wal`) ? statSync(`${path}-wal`).size : 0)
const payload = 'x'.repeat(1000)

describe('SQLite checkpoints in the background', () => {
  test('the log is copied by the worker, not on commit, and every row is kept', async () => {
    const path = join(dir, `t${files++}.db`)
    const warnings: string[] = []
    const d = await openDatabase({
      url: `sqlite:${path}`,
      backgroundCheckpoints: true,
      onWarning: (m) => warnings.push(m),
    })
    const raw = d.sqlite!
    assert.equal(raw.prepare('pragma wal_autocheckpoint').get()?.wal_autocheckpoint, 0)
    raw.exec('create table t (id integer primary key, v text)')
    const insert = raw.prepare('insert into t (v) values (?)')
    // 4,000 rows of 1 kB in transactions of 100, the event loop turning in between (as a server's).
    for (let i = 0; i < 40; i++) {
      raw.exec('begin immediate')
      for (let j = 0; j < 100; j++) insert.run(payload)
      raw.exec('commit')
      await new Promise((r) => setImmediate(r))
    }
    // Some 4 MB of log, more than the 1,000 pages the connection would have checkpointed at.
    assert.ok(walBytes(path) > 4_000_000, `log of ${walBytes(path)} bytes`)
    // Copied by the worker: the log's frames are all backfilled into the database file.
    await waitFor('the worker to copy the log', () => {
      const { frames, backfilled } = walIndex(path)
      return frames > 0 && backfilled === frames
    })
    await d.close()
    assert.deepEqual(warnings, [])
    const reopened = await openDatabase({ url: `sqlite:${path}` })
    const { rows } = await sql<{ n: number }>`select count(*) as n from t`.execute(reopened.db)
    assert.equal(rows[0]!.n, 4000)
    // Without the option the connection checkpoints on commit, as SQLite does by default.
    assert.equal(reopened.sqlite!.prepare('pragma wal_autocheckpoint').get()?.wal_autocheckpoint, 1000)
    await reopened.close()
  })

  test('a log past its bound is caught up between two transactions, then starts over cut back; stopping restores checkpoints on commit', async () => {
    const { path, raw } = walTable()
    const lock = countingLock()
    const maxLogBytes = 256 * 1024
    const checkpoints = await startBackgroundCheckpoints(path, servingSide(raw), lock, { intervalMs: 20, maxLogBytes })
    assert.equal(raw.prepare('pragma wal_autocheckpoint').get()?.wal_autocheckpoint, 0)
    assert.equal(raw.prepare('pragma journal_size_limit').get()?.journal_size_limit, maxLogBytes)
    // Holding the lock as a Kysely transaction would, two transactions outgrow the log's bound;
    // a reader (another process's snapshot) keeps the worker from copying the second: the log
    // is not wholly copied, so the serving thread is asked to catch up.
    await lock.acquire()
    const insert = raw.prepare('insert into t (v) values (?)')
    const write = (rows: number) => {
      raw.exec('begin immediate')
      for (let j = 0; j < rows; j++) insert.run(payload)
      raw.exec('commit')
    }
    write(100)
    const reader = new DatabaseSync(path)
    reader.exec('begin')
    assert.equal(reader.prepare('select count(*) as n from t').get()?.n, 100)
    write(1900)
    assert.ok(walBytes(path) > 1_000_000)
    // The serving thread is asked to catch up, and waits for the connection to be let go.
    await waitFor('the catch-up to ask for the connection', () => lock.asked === 2)
    reader.exec('commit')
    reader.close()
    lock.release()
    await waitFor('the log to be copied', () => {
      const { frames, backfilled } = walIndex(path)
      return frames > 0 && backfilled === frames
    })
    // The next transaction starts the log over, and the file is cut back to the bound.
    await lock.acquire()
    insert.run('after')
    lock.release()
    assert.ok(walIndex(path).frames < 10, `the log starts over (${walIndex(path).frames} frames)`)
    assert.ok(walBytes(path) <= maxLogBytes, `file cut back to ${walBytes(path)} bytes`)
    assert.equal(raw.prepare('select count(*) as n from t').get()?.n, 2001)
    // The rest was copied on the serving connection, between its two transactions.
    assert.ok(servingExecs.get(raw)!.some((text) => /wal_checkpoint\(PASSIVE\)/i.test(text)))
    await checkpoints.stop()
    assert.equal(raw.prepare('pragma wal_autocheckpoint').get()?.wal_autocheckpoint, 1000)
    raw.close()
  })

  test('stopping while a catch-up waits for the connection lets it go', async () => {
    const { path, raw } = walTable()
    const lock = countingLock()
    const checkpoints = await startBackgroundCheckpoints(path, raw, lock, { intervalMs: 20, maxLogBytes: 64 * 1024 })
    await lock.acquire()
    const insert = raw.prepare('insert into t (v) values (?)')
    insert.run(payload)
    // A reader's snapshot keeps the worker from copying the rest (as in the test above).
    const reader = new DatabaseSync(path)
    reader.exec('begin')
    reader.prepare('select count(*) as n from t').get()
    raw.exec('begin immediate')
    for (let j = 0; j < 499; j++) insert.run(payload)
    raw.exec('commit')
    await waitFor('the catch-up to ask for the connection', () => lock.asked === 2)
    reader.exec('commit')
    reader.close()
    const stopped = checkpoints.stop()
    lock.release()
    await stopped
    // The catch-up took the connection and gave it back: the lock is free, commits checkpoint again.
    await lock.acquire()
    lock.release()
    assert.equal(raw.prepare('pragma wal_autocheckpoint').get()?.wal_autocheckpoint, 1000)
    assert.equal(raw.prepare('select count(*) as n from t').get()?.n, 500)
    raw.close()
  })

  test('under steady writes the log keeps starting over instead of growing', async () => {
    const { path, raw } = walTable()
    const lock = new ConnectionLock()
    const maxLogBytes = 1024 * 1024
    const checkpoints = await startBackgroundCheckpoints(path, raw, lock, { intervalMs: 20, maxLogBytes })
    const insert = raw.prepare('insert into t (v) values (?)')
    // 24 MB in transactions of 200 rows, a few ms apart, 24 times the bound: the log must start
    // over again and again (the worker caught up in a gap, or the serving thread after a 'full').
    let restarts = 0
    let frames = 0
    for (let i = 0; i < 120; i++) {
      await lock.acquire()
      raw.exec('begin immediate')
      for (let j = 0; j < 200; j++) insert.run(payload)
      raw.exec('commit')
      lock.release()
      const now = walIndex(path).frames
      if (now < frames) restarts++
      frames = now
      await sleep(4)
    }
    assert.ok(restarts >= 2, `the log started over ${restarts} times`)
    assert.equal(raw.prepare('select count(*) as n from t').get()?.n, 24_000)
    await checkpoints.stop()
    raw.close()
  })

  test('the worker never keeps the process alive: a database left open does not hold it', () => {
    // A module file, not `node -e`: run that way the process exited even with the worker held (Node 24).
    const script = join(dir, 'left-open.mjs')
    writeFileSync(
      script,
      `import { openDatabase } from ${JSON.stringify(join(import.meta.dirname, '..', 'src', 'index.ts'))}
      const d = await openDatabase({ url: ${JSON.stringify(`sqlite:${join(dir, 'left-open.db')}`)}, backgroundCheckpoints: true })
      d.sqlite.exec('create table t (v text)')
      console.log('open')`,
    )
    const r = spawnSync(process.execPath, [script], { encoding: 'utf8', timeout: 20_000 })
    assert.equal(r.stdout.trim(), 'open', r.stderr)
    assert.equal(r.status, 0, `exit ${r.status} ${r.signal ?? ''}: ${r.stderr}`)
  })

  test('a log wholly copied is reported once, not every interval while nothing writes', async () => {
    const { path, raw } = walTable()
    const lock = countingLock()
    const checkpoints = await startBackgroundCheckpoints(path, raw, lock, { intervalMs: 10, maxLogBytes: 64 * 1024 })
    await lock.acquire()
    raw.exec('begin immediate')
    const insert = raw.prepare('insert into t (v) values (?)')
    for (let j = 0; j < 500; j++) insert.run(payload)
    raw.exec('commit')
    lock.release()
    // The worker copies it all; the log stays over its bound until the next write starts it over.
    await waitFor('the catch-up', () => lock.asked === 2)
    await sleep(300)
    assert.equal(lock.asked, 2, 'asked again for a log that had not moved')
    // A write starts it over; one past the bound again is reported again.
    await lock.acquire()
    raw.exec('begin immediate')
    for (let j = 0; j < 500; j++) insert.run(payload)
    raw.exec('commit')
    lock.release()
    await waitFor('the next catch-up', () => lock.asked === 4)
    await checkpoints.stop()
    raw.close()
  })

  test('an in-memory database has nothing to checkpoint and starts no worker', async () => {
    const d = await openDatabase({ url: 'sqlite::memory:', backgroundCheckpoints: true })
    assert.notEqual(d.sqlite!.prepare('pragma wal_autocheckpoint').get()?.wal_autocheckpoint, 0)
    await d.close()
  })
})
