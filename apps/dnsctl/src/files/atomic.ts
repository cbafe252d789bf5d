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
  await (await prepareFile(path, data)).commit()
}

/** A replacement written and fsync'd beside its target, not yet in place. */
export interface PreparedFile {
  /** Rename it over the target and fsync the folder. */
  commit(): Promise<void>
  /** Remove it (the target stays as it was). */
  discard(): Promise<void>
}

/**
 * The first half of writeFileAtomic: the temporary file, written and fsync'd. Nobody reads it,
 * so this can run while other steps that must come before the replacement are still going on;
 * a crash leaves only a temporary file, which removeLeftoverTemps clears at the next start.
 */
export async function prepareFile(path: string, data: string | Uint8Array): Promise<PreparedFile> {
  const dir = dirname(path)
  const tmp = join(dir, `${TMP_MARK}${basename(path)}.${randomBytes(6).toString('hex')}`)
  const handle = await open(tmp, 'w', 0o644)
  try {
    await handle.writeFile(data)
    await handle.sync()
  } catch (err) {
    await handle.close()
    await rm(tmp, { force: true })
    throw err
  }
  await handle.close()
  return {
    async commit() {
      try {
        await rename(tmp, path)
      } catch (err) {
        await rm(tmp, { force: true })
        throw err
      }
      await fsyncDir(dir)
    },
    discard: () => rm(tmp, { force: true }),
  }
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
