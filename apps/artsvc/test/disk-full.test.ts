/**
 * The storage disk fills up under a running artsvc (a small tmpfs as the storage root; the
 * database elsewhere): a publish answers 503 with Retry-After and leaves no file behind,
 * what was published is still listed and served, and publishing works again once space is freed.
 * Then the database's disk instead (PostgreSQL's data, SQLSTATE 53100), storage with room: the
 * same, at whichever step of the publish the database refuses. And the storage disk failing
 * (ext4 turns read-only after a disk error): a publish answers 503, the published sites are
 * still served from it.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import {
  mountFailingDisk,
  mountSmallDisk,
  postgresDatabaseOn,
  type SmallDisk,
  type TempDir,
  tempDir,
} from '@gatehouse/testkit'
import {
  type Backends,
  bearer,
  frameOf,
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

test('a full database disk under PostgreSQL: 503 for a publish, nothing but its upload left, committed again later', async (t) => {
  const dataDisk = mountSmallDisk('artsvc-pg-full-', 16)
  const storage = tempDir('artsvc-pg-full-storage-')
  const h = await startArtsvc({
    op: backends.op,
    env: { ARTSVC_STORAGE_ROOT: storage.path },
    databaseUrl: await postgresDatabaseOn(dataDisk, backends.pg),
  })
  t.after(async () => {
    await h.close()
    dataDisk.remove()
    storage.remove()
  })
  const owner = await bearer(backends.op, 'alice')
  const published = [
    (await mustPublish(h, owner, sampleBundle([{ name: 'one.bin', data: randomBytes(1000) }]))).artifact,
  ]
  const manifests = () => files(join(storage.path, 'manifests'))

  dataDisk.fill()
  // PostgreSQL may still find room in a table's last page for a while: publish until refused.
  let before = manifests()
  let refused: Awaited<ReturnType<typeof publishZip>> | undefined
  for (let i = 0; !refused; i++) {
    assert.ok(i < 200, 'the full disk refused a publish')
    const r = await publishZip(h, owner, sampleBundle([{ name: `f${i}.bin`, data: randomBytes(1000) }]), {
      title: 'x'.repeat(200),
    })
    if (r.status === 201) {
      published.push((r.body.artifact as { id: string }).id)
      before = manifests()
      continue
    }
    assert.equal(r.status, 503, JSON.stringify(r.body))
    assert.deepEqual(r.body.error, { code: 'unavailable', message: 'the database is unavailable' })
    refused = r
  }
  // No manifest of a version that was not published (content-addressed blobs may stay: they are
  // shared, and the upload, with its staged bundle, is kept for the commit to be sent again).
  assert.deepEqual(manifests(), before)
  const listed = (await (await fetch(`${h.base}/api/v1/artifacts`, { headers: owner })).json()) as {
    artifacts: Array<{ id: string }>
  }
  assert.deepEqual(listed.artifacts.map((x) => x.id).sort(), [...published].sort())
  assert.equal((await fetch(`${h.base}/a/${published[0]}`, { headers: owner })).status, 200)

  dataDisk.free()
  // Refused at the commit: the same upload commits now. Refused earlier: a new publish works.
  if (refused.commit) assert.equal((await refused.commit()).status, 201)
  else await mustPublish(h, owner, sampleBundle([{ name: 'after.bin', data: randomBytes(1000) }]))
  assert.equal(manifests().length, before.length + 1)
})

test('a failing storage disk: 503 for a publish; what was published is still served', async (t) => {
  const failing = mountFailingDisk('artsvc-failing-')
  const db = tempDir('artsvc-failing-db-')
  const h = await startArtsvc({
    op: backends.op,
    env: { ARTSVC_STORAGE_ROOT: failing.path, ARTSVC_DATABASE_URL: `sqlite:${join(db.path, 'artsvc.db')}` },
  })
  t.after(async () => {
    await h.close()
    failing.remove()
    db.remove()
  })
  const owner = await bearer(backends.op, 'alice')
  const p = await mustPublish(h, owner, sampleBundle([{ name: 'one.txt', data: 'published before' }]))
  const frame = frameOf(await (await fetch(`${h.base}/a/${p.artifact}`, { headers: owner })).text())

  failing.fail()
  const refused = await publishZip(h, owner, sampleBundle([{ name: 'two.bin', data: randomBytes(1000) }]))
  assert.equal(refused.status, 503, JSON.stringify(refused.body))
  assert.deepEqual(refused.body.error, { code: 'unavailable', message: 'storage is unavailable' })
  // Read from the disk that can no longer be written (not fetched before, so not in a cache).
  const file = await fetch(frame.replace('index.html', 'one.txt'))
  assert.equal(file.status, 200)
  assert.equal(await file.text(), 'published before')
})
