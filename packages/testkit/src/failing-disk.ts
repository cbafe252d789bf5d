/**
 * A disk that fails on demand, for tests of what a service does when its storage breaks under
 * it: a small ext4 file system of its own on a loop device, mounted `errors=remount-ro` as most
 * distributions mount their disks. `fail()` reports a file system error through the kernel's
 * own test hook (`/sys/fs/ext4/<device>/trigger_fs_error`), and ext4 does what it does after a
 * real disk error: it aborts its journal and turns the whole file system read-only. Every write
 * from then on fails (SQLite: "disk I/O error"), reads go on, and it stays so until an operator
 * unmounts and checks it, as on a real machine; a test that needs the disk back uses a new one.
 *
 * Mounting needs root, as the small-disk and network-namespace tests do.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, truncateSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { onExit, removeQuietly } from './cleanup.ts'
import { isRoot, requireBinary } from './env.ts'

export interface FailingDisk {
  /** Where it is mounted. */
  path: string
  /** Fail the file system as a disk error would: it turns read-only for good. */
  fail(): void
  /** Unmount it and remove its image (also done at exit). */
  remove(): void
}

export function mountFailingDisk(prefix: string, sizeMiB = 32): FailingDisk {
  if (!isRoot) throw new Error('a test of a failing disk mounts a loop device: run it as root (CI does)')
  const mkfs = requireBinary(['/usr/sbin/mkfs.ext4', '/sbin/mkfs.ext4'], 'e2fsprogs')
  const dir = mkdtempSync(join(tmpdir(), prefix))
  const image = join(dir, 'disk.img')
  const path = join(dir, 'mnt')
  mkdirSync(path)
  writeFileSync(image, '')
  truncateSync(image, sizeMiB * 1024 * 1024)
  execFileSync(mkfs, ['-q', '-F', image])
  // `loop` lets mount attach (and on unmount detach) a loop device of its own.
  execFileSync('mount', ['-o', 'loop,errors=remount-ro', image, path])
  const unmountAndRemove = () => {
    try {
      // Lazy: the service under test may still hold files open; the loop device goes with the last.
      execFileSync('umount', ['-l', path])
    } catch {
      // already unmounted
    }
    removeQuietly(dir)
  }
  const unregister = onExit(unmountAndRemove)
  const device = basename(execFileSync('findmnt', ['-no', 'SOURCE', path], { encoding: 'utf8' }).trim())
  const trigger = `/sys/fs/ext4/${device}/trigger_fs_error`
  if (!existsSync(trigger)) {
    unregister()
    unmountAndRemove()
    throw new Error(`${trigger} not found: this kernel's ext4 cannot be made to fail on demand`)
  }
  return {
    path,
    fail() {
      writeFileSync(trigger, 'a test failed this disk')
    },
    remove() {
      unregister()
      unmountAndRemove()
    },
  }
}
