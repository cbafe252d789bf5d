/**
 * The filesystem store makes its renames durable before the database commit names the version:
 * `flush` syncs each folder that gained a name, once, and nothing when none did.
 */
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import fsp from 'node:fs/promises'
import { syncBuiltinESMExports } from 'node:module'
import { join } from 'node:path'
import { after, mock, test } from 'node:test'
import { tempDir } from '@gatehouse/testkit'
import { FilesystemBlobStore } from '../src/storage/filesystem.ts'

const dir = tempDir('artsvc-flush-')
after(() => dir.remove())

test('flush syncs every folder a blob or manifest was renamed into, each once', async () => {
  const store = new FilesystemBlobStore(join(dir.path, 'store'))
  const put = async (sha: string) => {
    const temp = join(dir.path, `temp-${sha.slice(0, 4)}`)
    writeFileSync(temp, sha)
    await store.putFile(sha, temp)
  }
  await put(`aa${'1'.repeat(62)}`)
  await put(`aa${'2'.repeat(62)}`)
  await put(`bb${'3'.repeat(62)}`)
  await store.putManifest('v1', '{}')
  const synced: string[] = []
  const realOpen = fsp.open
  mock.method(fsp, 'open', async (path: string, flags?: string) => {
    const handle = await realOpen(path, flags)
    if (flags === 'r') {
      const sync = handle.sync.bind(handle)
      handle.sync = async () => {
        synced.push(path)
        return sync()
      }
    }
    return handle
  })
  syncBuiltinESMExports()
  try {
    await store.flush()
    assert.deepEqual(synced.sort(), [
      join(dir.path, 'store', 'manifests'),
      join(dir.path, 'store', 'objects', 'aa'),
      join(dir.path, 'store', 'objects', 'bb'),
    ])
    synced.length = 0
    await store.flush()
    assert.deepEqual(synced, [], 'nothing renamed since: nothing to sync')
  } finally {
    mock.restoreAll()
    syncBuiltinESMExports()
  }
})
