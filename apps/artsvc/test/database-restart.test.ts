/**
 * A PostgreSQL restart under a running artsvc. While the database is down, nothing is served
 * from the caches past the one-second liveness bound (a revocation could not reach this node),
 * so content, like the API, answers 503 with Retry-After; the process stays up. Once it is
 * back, content is served again, then from the caches once the liveness listener is back.
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { waitFor } from '@gatehouse/testkit'
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

before(async () => {
  backends = await startBackends()
  a = await startArtsvc({ op: backends.op, databaseUrl: await backends.pg.createDatabase() })
})
after(async () => {
  await a?.close()
  await backends?.stop()
})

async function get(url: string, headers: Record<string, string> = {}) {
  const before = a.svc.ctx.caches.fastResponses
  const r = await fetch(url, { headers })
  const body = await r.text()
  return {
    status: r.status,
    retryAfter: r.headers.get('retry-after'),
    body,
    fast: a.svc.ctx.caches.fastResponses > before,
  }
}

test('a PostgreSQL restart: content and API answer 503 while it is down, then content is served and cached again', async () => {
  const owner = await bearer(backends.op, 'alice')
  const p = await mustPublish(a, owner, sampleBundle())
  const frame = frameOf((await get(`${a.base}/a/${p.artifact}`, owner)).body)
  assert.equal((await get(frame)).status, 200)
  assert.deepEqual((await get(frame)).fast, true, 'served from the caches')

  await backends.pg.halt()
  // Within the liveness bound, the content stops being served.
  const refused = await waitFor('content to stop being served', async () => {
    const r = await get(frame)
    return r.status === 200 ? undefined : r
  })
  assert.equal(refused.status, 503, refused.body)
  assert.equal(refused.retryAfter, '5')
  const api = await get(`${a.base}/api/v1/artifacts/${p.artifact}`, owner)
  assert.equal(api.status, 503, api.body)
  assert.equal(JSON.parse(api.body).error.code, 'unavailable')
  assert.equal((await get(`${a.base}/readyz`)).status, 503)

  await backends.pg.resume()
  assert.equal((await get(frame)).status, 200)
  assert.equal((await get(`${a.base}/api/v1/artifacts/${p.artifact}`, owner)).status, 200)
  // The liveness listener reconnects by itself; then the caches serve again.
  await waitFor('content served from the caches again', async () => {
    await get(frame)
    return (await get(frame)).fast
  })
})
