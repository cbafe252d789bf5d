/**
 * Blobs as files under `<root>/objects/ab/cdef…`, written to a temp name and renamed into
 * place; folders 0700 and files 0600 (private artifacts, see docs/security.md).
 */
import { createReadStream } from 'node:fs'
import { open, rename, rm, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import type { Readable } from 'node:stream'
import { mkdirPrivate, PRIVATE_FILE_MODE } from '@gatehouse/kit'
import { type BlobStore, type ByteRange, blobKey } from './blob-store.ts'

export class FilesystemBlobStore implements BlobStore {
  readonly kind = 'filesystem'
  readonly root: string
  /** Folders that gained a name since the last flush. */
  readonly #renamedIn = new Set<string>()

  constructor(root: string) {
    this.root = root
  }

  async putFile(sha256: string, tempPath: string): Promise<void> {
    const dest = join(this.root, blobKey(sha256))
    await mkdirPrivate(dirname(dest))
    // Data reaches the disk before the name does, so a crash never leaves a short blob
    // under a final name; the rename replaces an identical blob atomically.
    const handle = await open(tempPath, 'r+')
    try {
      await handle.datasync()
    } finally {
      await handle.close()
    }
    await rename(tempPath, dest)
    this.#renamedIn.add(dirname(dest))
  }

  async flush(): Promise<void> {
    // A rename is durable once its folder is synced: without this, a power cut after the
    // database commit could leave a version whose blob has no name on disk.
    const dirs = [...this.#renamedIn]
    this.#renamedIn.clear()
    await Promise.all(
      dirs.map(async (dir) => {
        const handle = await open(dir, 'r')
        try {
          await handle.sync()
        } finally {
          await handle.close()
        }
      }),
    )
  }

  async putManifest(name: string, body: string): Promise<void> {
    const dest = join(this.root, 'manifests', `${name}.json`)
    await mkdirPrivate(dirname(dest))
    const temp = `${dest}.tmp-${process.pid}`
    await writeFile(temp, body, { flush: true, mode: PRIVATE_FILE_MODE })
    await rename(temp, dest)
    this.#renamedIn.add(dirname(dest))
  }

  async removeUnpublishedManifest(name: string): Promise<void> {
    await rm(join(this.root, 'manifests', `${name}.json`), { force: true })
  }

  async read(sha256: string, range?: ByteRange): Promise<Readable> {
    const path = join(this.root, blobKey(sha256))
    const stream = createReadStream(path, range ? { start: range.start, end: range.end } : {})
    await new Promise<void>((resolve, reject) => {
      stream.once('open', () => resolve())
      stream.once('error', reject)
    })
    return stream
  }

  async check(): Promise<void> {
    const probe = join(this.root, 'objects', `.probe-${process.pid}`)
    await mkdirPrivate(dirname(probe))
    await writeFile(probe, 'ok')
    await rm(probe, { force: true })
  }
}
