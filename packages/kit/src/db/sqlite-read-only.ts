/**
 * A SQLite file opened for reading only, for commands that only read when its file system no
 * longer takes writes: a disk error (ext4 turns the disk read-only), a read-only mount, a
 * snapshot. Loaded only then (`DatabaseOptions.readsOnly`).
 */
import { statSync } from 'node:fs'
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { StartupError } from '../errors.ts'
import { NodeSqliteDatabase } from './sqlite-adapter.ts'

/** Whether opening for writing failed because the file system is read-only. */
export function isReadOnlyFileSystem(err: unknown): boolean {
  const e = err as { code?: unknown; errcode?: unknown }
  // SQLITE_READONLY and its extended codes.
  return e?.code === 'EROFS' || (typeof e?.errcode === 'number' && (e.errcode & 0xff) === 8)
}

function logBytes(location: string): number {
  try {
    return statSync(`${location}-wal`).size
  } catch {
    return 0
  }
}

/**
 * Open `location` read-only. A file in WAL mode is read with its write-ahead log, which SQLite
 * can do read-only only while the log's index (`-shm`) is there: a writer still running, or one
 * that stopped when the disk failed. Once the last writer has closed cleanly there is no log,
 * the file alone is the whole database, and it is read as immutable (SQLite then needs no index).
 * A log without its index cannot be read without writing one: that is a StartupError.
 */
export function openSqliteReadOnly(location: string, busyTimeoutMs: number | undefined): NodeSqliteDatabase {
  const options = { readOnly: true, ...(busyTimeoutMs === undefined ? {} : { busyTimeoutMs }) }
  let first: unknown
  try {
    return probed(new NodeSqliteDatabase(location, options))
  } catch (err) {
    first = err
  }
  if (logBytes(location) > 0) {
    throw new StartupError(
      `database ${location} is on a read-only file system and cannot be read: ${(first as Error).message} (its write-ahead log has no index)`,
      { cause: first },
    )
  }
  const url = pathToFileURL(resolve(location))
  url.searchParams.set('immutable', '1')
  try {
    return probed(new NodeSqliteDatabase(url, options))
  } catch (err) {
    throw new StartupError(`database ${location} cannot be read: ${(err as Error).message}`, { cause: err })
  }
}

/** SQLite opens the file (and its log) on the first read: read the header now, so a failure is the opener's. */
function probed(file: NodeSqliteDatabase): NodeSqliteDatabase {
  try {
    file.raw.prepare('PRAGMA schema_version').get()
    return file
  } catch (err) {
    file.close()
    throw err
  }
}
