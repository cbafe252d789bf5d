/**
 * The storage root and its fixed folders, and the folder of a SQLite database, are made
 * (owner-only) before the server opens anything in them: one folder at a time, so a place
 * where no folder can be made stops start-up at once with one line naming the path and the
 * cause. Node's recursive mkdir (the kit's `mkdirPrivate`) never returns where mkdir answers
 * ENOENT although the parent exists (/proc), and its ENOTDIR/EEXIST answers name a path, not
 * what is wrong with it.
 */
import { constants } from 'node:fs'
import { access, mkdir, stat } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import { PRIVATE_DIR_MODE, StartupError } from '@gatehouse/kit'

const CAUSES: Record<string, string> = {
  EROFS: 'the file system is read-only',
  EACCES: 'permission denied',
  EPERM: 'the file system does not allow it',
  ENOSPC: 'the disk is full',
  EDQUOT: 'the disk quota is used up',
  // mkdir in an existing folder that answers "no such file": a virtual file system (/proc).
  ENOENT: 'the file system there does not allow new folders',
  ELOOP: 'too many symbolic links',
  ENAMETOOLONG: 'the name is too long',
}

function cause(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code
  return code && CAUSES[code] ? `${CAUSES[code]} (${code})` : (err as Error).message
}

/**
 * Create `root`, its missing parents and its `folders` (names directly under it; 0700), or
 * throw a StartupError naming why it cannot be used.
 */
export function prepareStorageRoot(root: string, folders: string[]): Promise<void> {
  return prepareFolder(root, folders, `storage root ${root} (ARTSVC_STORAGE_ROOT)`)
}

/** The folder of a SQLite database file (`sqlite:` URL), before the kit opens it. */
export async function prepareDatabaseFolder(location: string): Promise<void> {
  if (location === ':memory:') return
  const folder = dirname(resolve(location))
  await prepareFolder(folder, [], `database ${location}: folder ${folder}`)
}

async function prepareFolder(root: string, folders: string[], what: string): Promise<void> {
  const fail = (why: string, err?: unknown) => new StartupError(`${what} cannot be used: ${why}`, { cause: err })
  const notFolder = (path: string) => fail(`${path} is a file, not a folder`)
  const target = resolve(root)
  const missing: string[] = []
  for (let path = target; ; path = dirname(path)) {
    let isFolder: boolean
    try {
      isFolder = (await stat(path)).isDirectory()
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      // Missing, or below a file (ENOTDIR): look further up; the file is named there.
      if ((code !== 'ENOENT' && code !== 'ENOTDIR') || path === dirname(path)) throw fail(`${path}: ${cause(err)}`, err)
      missing.unshift(path)
      continue
    }
    if (!isFolder) throw notFolder(path)
    break
  }
  for (const path of [...missing, ...folders.map((name) => join(target, name))]) {
    try {
      await mkdir(path, { mode: PRIVATE_DIR_MODE })
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw fail(`cannot create ${path}: ${cause(err)}`, err)
      // There already, or made meanwhile by another process (a second node starting beside this one).
      if (!(await isDirectory(path))) throw notFolder(path)
    }
  }
  try {
    await access(target, constants.W_OK | constants.X_OK)
  } catch (err) {
    throw fail(`cannot write in ${target}: ${cause(err)}`, err)
  }
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory()
  } catch {
    return false
  }
}
