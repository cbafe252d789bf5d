/**
 * Two artsvc nodes on one PostgreSQL database and one storage root: a share revoked or an
 * artifact deleted on node A stops node B's content answers as soon as B receives the
 * revocation's notification — B's clock is frozen, so its one-second liveness cache can
 * never expire on its own here. While B's listener is down, B caches no liveness.
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { setTimeout as delay } from 'node:timers/promises'
import { sql } from 'kysely'
import {
  type Backends,
  bearer,
  frameOf,
  type Harness,
  mustPublish,
  startArtsvc,
  startBackends,
} from './helpers/harness.ts'
import { sampleBundle } from './helpers/zip-builder.ts'

let backends: Backends
let a: Harness
let b: Harness

before(async () => {
  backends = await startBackends()
  const url = await backends.pg.createDatabase()
  a = await startArtsvc({ op: backends.op, databaseUrl: url })
  const frozen = Date.now()
  b = await startArtsvc({
    op: backends.op,
    databaseUrl: url,
    env: { ARTSVC_STORAGE_ROOT: a.root },
    deps: { now: () => frozen },
  })
})
after(async () => {
  await b?.close()
  await a?.close()
  await backends?.stop()
})

/** The same ticket URL on node B's content origin. */
const onB = (frame: string) => frame.replace(a.content, b.content)

async function status(url: string): Promise<{ status: number; fast: boolean }> {
  const before = b.svc.ctx.caches.fastResponses
  const r = await fetch(url)
  await r.arrayBuffer()
  return { status: r.status, fast: b.svc.ctx.caches.fastResponses > before }
}

/** Wait (no deadline but the test's) until node B has processed another invalidation. */
async function nextInvalidation(since: number) {
  while (b.svc.ctx.caches.invalidations === since) await delay(2)
}

test('revocations and deletions on one node reach the other at once (PostgreSQL notifications)', async () => {
  const owner = await bearer(backends.op, 'alice')
  const admin = await bearer(backends.op, 'root-admin')
  assert.equal((await fetch(`${a.base}/api/v1/me`, { headers: admin })).status, 200)
  const p = await mustPublish(a, owner, sampleBundle())
  const created = await fetch(`${a.base}/api/v1/artifacts/${p.artifact}/shares`, {
    method: 'POST',
    headers: { ...owner, 'content-type': 'application/json' },
    body: '{}',
  })
  const share = (await created.json()) as { id: string; url: string }
  const opened = await fetch(share.url, { redirect: 'manual' })
  const cookie = opened.headers.getSetCookie()[0]!.split(';')[0]!
  const shareFrame = onB(frameOf(await (await fetch(`${a.base}/shared/${share.id}/`, { headers: { cookie } })).text()))
  const ownerFrame = onB(frameOf(await (await fetch(`${a.base}/a/${p.artifact}`, { headers: owner })).text()))
  for (const f of [shareFrame, ownerFrame]) {
    assert.equal((await status(f)).status, 200)
    assert.deepEqual(await status(f), { status: 200, fast: true }, 'B serves from its caches')
  }

  let seen = b.svc.ctx.caches.invalidations
  const revoke = await fetch(`${a.base}/api/v1/artifacts/${p.artifact}/shares/${share.id}`, {
    method: 'DELETE',
    headers: owner,
  })
  assert.equal(revoke.status, 204)
  await nextInvalidation(seen)
  assert.deepEqual(await status(shareFrame), { status: 403, fast: false })
  assert.equal((await status(ownerFrame)).status, 200)
  assert.deepEqual(await status(ownerFrame), { status: 200, fast: true })

  seen = b.svc.ctx.caches.invalidations
  assert.equal(
    (await fetch(`${a.base}/api/v1/admin/artifacts/${p.artifact}`, { method: 'DELETE', headers: admin })).status,
    204,
  )
  await nextInvalidation(seen)
  assert.deepEqual(await status(ownerFrame), { status: 403, fast: false })
})

test('while the listener is down nothing is cached as live; it reconnects by itself', async () => {
  const owner = await bearer(backends.op, 'alice')
  const p = await mustPublish(a, owner, sampleBundle())
  const frame = onB(frameOf(await (await fetch(`${a.base}/a/${p.artifact}`, { headers: owner })).text()))
  await status(frame)
  assert.deepEqual(await status(frame), { status: 200, fast: true })
  const seen = b.svc.ctx.caches.invalidations
  const killed = await sql<{ n: number }>`
    select count(pg_terminate_backend(pid))::int as n from pg_stat_activity
    where query like '%LISTEN artsvc_liveness%' and pid <> pg_backend_pid()`.execute(a.svc.ctx.database.db)
  assert.ok(killed.rows[0]!.n >= 2, 'both nodes listen')
  await nextInvalidation(seen)
  // Down (or already back, with an empty cache): either way this answer is not from the cache.
  assert.deepEqual(await status(frame), { status: 200, fast: false })
  // Back: liveness is cached again.
  for (;;) {
    await status(frame)
    if ((await status(frame)).fast) break
    await delay(50)
  }
})
