/**
 * `<app> backup FILE`: a consistent copy of an app's SQLite database, taken while `serve` runs.
 *
 * Copying the file with `cp` while the server writes can give a copy that is torn between two
 * transactions, or one without the commits still in the write-ahead log; the sqlite3 shell's
 * `.backup` is not installed everywhere. `VACUUM INTO` reads one snapshot in a single read
 * transaction, which on a write-ahead-log database never blocks the server's writers, and writes
 * a compact file that opens on its own (no -wal or -shm beside it). The online backup API would
 * restart on every write another connection makes, so under steady writes it may never finish.
 *
 * The copy holds what the database holds (token hashes, keys), so it is created owner-only and
 * never over an existing file.
 */
import { closeSync, openSync, rmSync, statSync } from 'node:fs'
import { DatabaseSync } from 'node:sqlite'
import type { Database } from '../db/database.ts'
import { PRIVATE_FILE_MODE } from '../private-files.ts'
import { CliError } from './program.ts'

/** Copy `d` into the new file `target`, check the copy, and return the line to print. */
export function backupDatabase(d: Pick<Database<unknown>, 'kind' | 'sqlite'>, target: string): string {
  if (d.kind !== 'sqlite' || !d.sqlite) {
    throw new CliError('backup copies a SQLite database; for PostgreSQL use pg_dump')
  }
  try {
    // Owner-only and exclusive: VACUUM INTO writes into an empty file it finds, keeping its mode.
    closeSync(openSync(target, 'wx', PRIVATE_FILE_MODE))
  } catch (err) {
    const e = err as NodeJS.ErrnoException
    throw new CliError(
      e.code === 'EEXIST' ? `${target} exists; back up to a new file` : `cannot create ${target}: ${e.message}`,
    )
  }
  try {
    d.sqlite.prepare('vacuum into ?').run(target)
    const copy = new DatabaseSync(target, { readOnly: true })
    try {
      const check = copy.prepare('pragma quick_check').get() as { quick_check?: string } | undefined
      if (check?.quick_check !== 'ok') throw new Error(`the copy fails its check: ${check?.quick_check ?? 'no answer'}`)
    } finally {
      copy.close()
    }
  } catch (err) {
    rmSync(target, { force: true })
    throw new CliError(`backup to ${target} failed, nothing kept: ${(err as Error).message}`)
  }
  const mib = statSync(target).size / (1024 * 1024)
  return `backed up to ${target} (${mib < 10 ? mib.toFixed(1) : Math.round(mib)} MiB, checked)`
}
