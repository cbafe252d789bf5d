/**
 * The storage disk fills up under a running artsvc (a small tmpfs as the storage root; the
 * database elsewhere): a publish answers 503 with Retry-After and leaves no file behind,
 * what was published is still listed and served, and publishing works again once space is freed.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { mountSmallDisk, type SmallDisk, type TempDir, tempDir } from '@gatehouse/testkit'
import {
  type Backends,
  bearer,
  type Harness,
  mustPublish,
  publishZip,
  startArtsvc,
  startBackends,
} from './helpers/harness.ts'
import { sampleBundle } from './helpers/zip-builder.ts'

let backends: Backends
let a: Harness
let disk: SmallDisk
let database: TempDir

before(async () => {
  disk = mountSmallDisk('artsvc-full-', 8)
  database = tempDir('artsvc-full-db-')
  backends = await startBackends()
  a = await startArtsvc({
    op: backends.op,
    env: { ARTSVC_STORAGE_ROOT: disk.path, ARTSVC_DATABASE_URL: `sqlite:${join(database.path, 'artsvc.db')}` },
  })
})
after(async () => {
  await a?.close()
  await backends?.stop()
  disk?.remove()
  database?.remove()
})

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)],
  )
}

test('a full storage disk: 503 for a publish, nothing left behind, the rest still served', async () => {
  const owner = await bearer(backends.op, 'alice')
  const before = await mustPublish(a, owner, sampleBundle([{ name: 'one.bin', data: randomBytes(1000) }]))
  const stored = files(disk.path)

  disk.fill()
  for (let i = 0; i < 2; i++) {
    const refused = await publishZip(a, owner, sampleBundle([{ name: 'big.bin', data: randomBytes(500_000) }]))
    assert.equal(refused.status, 503, JSON.stringify(refused.body))
    assert.deepEqual(refused.body.error, { code: 'unavailable', message: 'storage is unavailable' })
  }
  // No half-written blob, manifest or staged upload, and no artifact without its files.
  assert.deepEqual(
    files(disk.path).filter((f) => f !== disk.filler),
    stored,
  )
  const listed = (await (await fetch(`${a.base}/api/v1/artifacts`, { headers: owner })).json()) as {
    artifacts: Array<{ id: string }>
  }
  assert.deepEqual(
    listed.artifacts.map((x) => x.id),
    [before.artifact],
  )
  assert.equal((await fetch(`${a.base}/a/${before.artifact}`, { headers: owner })).status, 200)

  disk.free()
  const after = await mustPublish(a, owner, sampleBundle([{ name: 'big.bin', data: randomBytes(500_000) }]))
  assert.notEqual(after.artifact, before.artifact)
})
