/**
 * Durable file replacement: write a temporary file beside the target, fsync it, rename it
 * over the target, fsync the folder. A reader (or knotd) sees the old or the new content,
 * never a mix, and after a crash the rename is either on disk or not.
 */
import { randomBytes } from 'node:crypto'
import { open, readdir, rename, rm } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'

const TMP_MARK = '.dnsctl-tmp-'

async function fsyncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r')
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}

export async function writeFileAtomic(path: string, data: string | Uint8Array): Promise<void> {
  const dir = dirname(path)
  const tmp = join(dir, `${TMP_MARK}${basename(path)}.${randomBytes(6).toString('hex')}`)
  const handle = await open(tmp, 'w', 0o644)
  try {
    await handle.writeFile(data)
    await handle.sync()
  } finally {
    await handle.close()
  }
  try {
    await rename(tmp, path)
  } catch (err) {
    await rm(tmp, { force: true })
    throw err
  }
  await fsyncDir(dir)
}

/** Remove a file durably; a missing file is fine. */
export async function removeFileDurably(path: string): Promise<void> {
  await rm(path, { force: true })
  await fsyncDir(dirname(path))
}

/** Remove temporary files a crash left behind in `dir`. */
export async function removeLeftoverTemps(dir: string): Promise<void> {
  let names: string[]
  try {
    names = await readdir(dir)
  } catch {
    return
  }
  await Promise.all(names.filter((n) => n.startsWith(TMP_MARK)).map((n) => rm(join(dir, n), { force: true })))
}
