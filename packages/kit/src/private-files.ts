/**
 * Owner-only state on disk. Databases, keys, credential files and storage folders hold
 * private notifications, artifacts, DNS history and secrets; created with the process
 * umask (usually 022) any local user could read them. What the kit and the apps create
 * is 0600 (files) and 0700 (folders) instead, whatever the umask. Existing files and
 * folders keep their mode: tightening them is the operator's call (docs/security.md).
 */
import { dirname, resolve } from 'node:path'
import { fs, mkdirSync, statSync } from './startup-builtins.ts'

/** Mode of files the apps create: read and write for the owner only. */
export const PRIVATE_FILE_MODE = 0o600
/** Mode of folders the apps create: the owner only. */
export const PRIVATE_DIR_MODE = 0o700

/**
 * Create `path` and any missing parents as owner-only folders (0700); existing ones are left as
 * they are. One level at a time, not Node's recursive mkdir: that one never returns (and, sync,
 * blocks the process, which then ignores SIGTERM) where mkdir answers ENOENT in a folder that
 * exists, as under /proc. A path through a file throws ENOTDIR naming the file.
 *
 * @example await mkdirPrivate(join(storageDir, 'objects', 'ab'))
 */
export async function mkdirPrivate(path: string): Promise<void> {
  const missing: string[] = []
  for (let p = resolve(path); ; p = dirname(p)) {
    try {
      if ((await fs.promises.stat(p)).isDirectory()) break
      throw notAFolder(p)
    } catch (err) {
      if (!climbs(err, p)) throw err
      missing.unshift(p)
    }
  }
  for (const p of missing) {
    try {
      await fs.promises.mkdir(p, { mode: PRIVATE_DIR_MODE })
    } catch (err) {
      // Made meanwhile by another process or call: fine if it is a folder.
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || !(await fs.promises.stat(p)).isDirectory()) throw err
    }
  }
}

/** `mkdirPrivate` for startup code that is synchronous. */
export function mkdirPrivateSync(path: string): void {
  const missing: string[] = []
  for (let p = resolve(path); ; p = dirname(p)) {
    try {
      if (statSync(p).isDirectory()) break
      throw notAFolder(p)
    } catch (err) {
      if (!climbs(err, p)) throw err
      missing.unshift(p)
    }
  }
  for (const p of missing) {
    try {
      mkdirSync(p, { mode: PRIVATE_DIR_MODE })
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || !statSync(p).isDirectory()) throw err
    }
  }
}

// Missing, or below a file (ENOTDIR, the file is found further up): look at the parent.
function climbs(err: unknown, p: string): boolean {
  const code = (err as NodeJS.ErrnoException).code
  return (code === 'ENOENT' || code === 'ENOTDIR') && p !== dirname(p) && !(err as { notAFolder?: boolean }).notAFolder
}

function notAFolder(p: string): Error {
  return Object.assign(new Error(`${p} is a file, not a folder`), { code: 'ENOTDIR', path: p, notAFolder: true })
}
