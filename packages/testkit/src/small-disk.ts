/**
 * A disk that fills up on demand, for tests of what a service does when it runs out of space:
 * a small tmpfs of its own (mounting needs root, as the network-namespace tests do), filled by
 * one file until the kernel says "no space left on device", and emptied by removing that file.
 */
import { execFileSync } from 'node:child_process'
import { chownSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { onExit, removeQuietly } from './cleanup.ts'
import { isRoot, userIds } from './env.ts'
import type { Postgres } from './postgres.ts'

export interface SmallDisk {
  /** Where it is mounted. */
  path: string
  /** The file `fill()` writes, which the disk's other files do not include. */
  filler: string
  /** Write until the disk is full. */
  fill(): void
  /** Remove what `fill()` wrote. */
  free(): void
  /** Unmount it and remove its folder (also done at exit). */
  remove(): void
}

export function mountSmallDisk(prefix: string, sizeMiB: number): SmallDisk {
  if (!isRoot) throw new Error('a test of a full disk mounts a tmpfs: run it as root (CI does)')
  const path = mkdtempSync(join(tmpdir(), prefix))
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMiB}m`, 'tmpfs', path])
  // Unmounted before its folder goes, at exit too (a crashed test must not leave a mount).
  const unmountAndRemove = () => {
    try {
      execFileSync('umount', ['-l', path])
    } catch {
      // already unmounted
    }
    removeQuietly(path)
  }
  const unregister = onExit(unmountAndRemove)
  const filler = join(path, 'filler')
  return {
    path,
    filler,
    fill() {
      try {
        execFileSync('dd', ['if=/dev/zero', `of=${filler}`, 'bs=64k'], { stdio: 'ignore' })
      } catch {
        // dd ends with "No space left on device": the disk is full.
      }
    },
    free() {
      rmSync(filler, { force: true })
    },
    remove() {
      unregister()
      unmountAndRemove()
    },
  }
}

let tablespaces = 0

/**
 * A new database of `server` whose tables and indexes live on `disk` (a tablespace there), and
 * its URL. The write-ahead log stays on the server's own disk: a full WAL disk stops PostgreSQL
 * altogether, which is a restart; a full data disk fails writes with SQLSTATE 53100.
 */
export async function postgresDatabaseOn(disk: SmallDisk, server: Postgres): Promise<string> {
  const name = `small_disk_${++tablespaces}`
  const location = join(disk.path, name)
  mkdirSync(location)
  const ids = userIds('postgres')
  if (!ids) throw new Error('a tablespace needs the postgres system user (installed with the postgresql package)')
  chownSync(location, ids.uid, ids.gid)
  await server.query(`create tablespace ${name} location '${location}'`)
  await server.query(`create database ${name} tablespace ${name}`)
  return server.url.replace(/\/postgres$/, `/${name}`)
}
