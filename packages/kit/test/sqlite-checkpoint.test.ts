/**
 * SQLite checkpoints on a worker thread (`backgroundCheckpoints`): the serving connection stops
 * checkpointing on commit, the worker copies the log meanwhile, an oversized log is emptied
 * between two transactions, and nothing written is lost.
 */
import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { after, describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { ConnectionLock } from '../src/db/sqlite-adapter.ts'
import { startBackgroundCheckpoints } from '../src/db/sqlite-checkpoint.ts'
import { openDatabase, sql } from '../src/index.ts'

const dir = mkdtempSync(join(tmpdir(), 'kit-checkpoint-'))
after(() => rmSync(dir, { recursive: true, force: true }))
let files = 0

/** Polls `check` every 20 ms for up to 10 s. */
async function until(what: string, check: () => boolean) {
  for (let waited = 0; waited < 10_000; waited += 20) {
    if (check()) return
    await sleep(20)
  }
  assert.fail(`timed out waiting for ${what}`)
}

/**
 * The log's frame count and how many are copied into the database file, read from the wal-index
 * (`-shm`, https://sqlite.org/walformat.html: `mxFrame` at byte 16 of its header, `nBackfill` at
 * byte 96), without checkpointing as `pragma wal_checkpoint` would.
 */
function walIndex(path: string) {
  const shm = readFileSync(`${path}-shm`).subarray(0, 100)
  return { frames: shm.readUInt32LE(16), backfilled: shm.readUInt32LE(96) }
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
    await until('the worker to copy the log', () => {
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

  test('a log past its bound is emptied between two transactions; stopping restores checkpoints on commit', async () => {
    const path = join(dir, `t${files++}.db`)
    const raw = new DatabaseSync(path)
    raw.exec('pragma journal_mode = wal')
    raw.exec('create table t (id integer primary key, v text)')
    const lock = new ConnectionLock()
    const checkpoints = await startBackgroundCheckpoints(path, raw, lock, { intervalMs: 20, truncateBytes: 256 * 1024 })
    assert.equal(raw.prepare('pragma wal_autocheckpoint').get()?.wal_autocheckpoint, 0)
    // One long transaction, holding the lock as a Kysely transaction would: the log outgrows its
    // bound, and PASSIVE checkpoints alone never shrink the file.
    await lock.acquire()
    raw.exec('begin immediate')
    const insert = raw.prepare('insert into t (v) values (?)')
    for (let j = 0; j < 2000; j++) insert.run(payload)
    raw.exec('commit')
    assert.ok(walBytes(path) > 1_000_000)
    // Emptied only once the transaction lets go of the connection.
    await sleep(100)
    assert.ok(walBytes(path) > 1_000_000, 'not emptied while the connection is held')
    lock.release()
    await until('the log to be emptied', () => walBytes(path) === 0)
    assert.equal(raw.prepare('select count(*) as n from t').get()?.n, 2000)
    await checkpoints.stop()
    assert.equal(raw.prepare('pragma wal_autocheckpoint').get()?.wal_autocheckpoint, 1000)
    raw.close()
  })

  test('an in-memory database has nothing to checkpoint and starts no worker', async () => {
    const d = await openDatabase({ url: 'sqlite::memory:', backgroundCheckpoints: true })
    assert.notEqual(d.sqlite!.prepare('pragma wal_autocheckpoint').get()?.wal_autocheckpoint, 0)
    await d.close()
  })
})
