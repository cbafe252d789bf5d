/**
 * The content origin's lean path (src/content/fast.ts) against the full Fastify route:
 * the same status, headers and bytes for every kind of response it takes over (a file the
 * cached manifest lacks included: 404); it never answers what it cannot decide from memory
 * (other errors, revoked shares, other hosts and methods), so those still get the full
 * path's answers. A first fetch or stale liveness in the kit's
 * HTTP lane is held while the full route's loaders fill the caches, then answered by the lean
 * path; behind node:http it takes the full route.
 */
import assert from 'node:assert/strict'
import { Agent, request } from 'node:http'
import { after, afterEach, before, beforeEach, describe, test } from 'node:test'
import {
  type Backends,
  bearer,
  frameOf,
  type Harness,
  mustPublish,
  startArtsvc,
  startBackends,
  TestClock,
} from './helpers/harness.ts'
import { sampleBundle } from './helpers/zip-builder.ts'

let backends: Backends
/** The service of the suite running (one per database). */
let h: Harness
let owner: Record<string, string>
const clock = new TestClock()

before(async () => {
  backends = await startBackends()
  owner = await bearer(backends.op, 'alice')
})
after(() => backends?.stop())
// Time stands still inside each test (advanced only by the test): what a test asserts about the
// one-second liveness TTL must not depend on how fast a loaded machine runs it.
beforeEach(() => clock.freeze())
afterEach(() => clock.thaw())

/** Everything but the per-response headers (date, request id, connection keep-alive). */
function comparable(r: Response): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [k, v] of r.headers) if (!['date', 'x-request-id', 'keep-alive', 'connection'].includes(k)) out[k] = v
  return out
}

/**
 * Each request on a new connection: `lane`, it meets the kit's HTTP lane (artsvc's default);
 * `node`, a header outside the lane's subset (TE) gives it to node:http, where the lean path
 * answers only from warm caches and the full route takes the rest.
 */
async function fetchBoth(url: string, init: RequestInit = {}, via: 'lane' | 'node' = 'lane') {
  const fast0 = h.svc.ctx.caches.fastResponses
  const headers = new Headers(init.headers)
  headers.set('connection', 'close')
  if (via === 'node') headers.set('te', 'trailers')
  const r = await fetch(url, { ...init, headers })
  const body = Buffer.from(await r.arrayBuffer())
  return { r, body, fast: h.svc.ctx.caches.fastResponses - fast0 === 1 }
}

// The lean path and its warming read liveness and manifests through the database: both databases.
for (const dbName of ['sqlite', 'postgres'] as const) {
  describe(`the content origin's lean path on ${dbName}`, () => {
    before(async () => {
      h = await startArtsvc({
        op: backends.op,
        clock,
        ...(dbName === 'postgres' ? { databaseUrl: await backends.pg.createDatabase() } : {}),
      })
    })
    after(() => h?.close())

    test('byte ranges of files other than HTML: 206 with Content-Range, 416 past the end, the whole file otherwise', async () => {
      const small = Buffer.from(Array.from({ length: 1000 }, (_, i) => i % 251))
      const large = Buffer.alloc(300 * 1024 + 7, 0x61)
      large.write('tail-marker', large.length - 11)
      const p = await mustPublish(
        h,
        owner,
        sampleBundle([
          { name: 'clip.bin', data: small },
          { name: 'fresh.bin', data: small },
          { name: 'movie.mp4', data: large },
        ]),
      )
      const frame = frameOf(await (await fetch(`${h.base}/a/${p.artifact}`, { headers: owner })).text())
      const clip = frame.replace('index.html', 'clip.bin')
      const whole = await fetchBoth(clip)
      assert.equal(whole.r.headers.get('accept-ranges'), 'bytes')
      const etag = whole.r.headers.get('etag')!
      const ranged = async (url: string, range: string, extra: Record<string, string> = {}) => {
        const r = await fetchBoth(url, { headers: { range, ...extra } })
        assert.equal(r.fast, false, 'a range takes the full route')
        return r
      }
      for (const [range, start, end] of [
        ['bytes=2-5', 2, 5],
        ['bytes=990-', 990, 999],
        ['bytes=-3', 997, 999],
        ['bytes=995-5000', 995, 999],
        ['bytes=0-0', 0, 0],
      ] as const) {
        // From the small-file cache (the whole file was fetched above).
        const r = await ranged(clip, range)
        assert.equal(r.r.status, 206, range)
        assert.equal(r.r.headers.get('content-range'), `bytes ${start}-${end}/1000`, range)
        assert.equal(Number(r.r.headers.get('content-length')), end - start + 1, range)
        assert.ok(r.body.equals(small.subarray(start, end + 1)), range)
        assert.equal(r.r.headers.get('etag'), etag)
      }
      // Not cached: read from the store as a range.
      const fresh = await ranged(frame.replace('index.html', 'fresh.bin'), 'bytes=10-19')
      assert.equal(fresh.r.status, 206)
      assert.ok(fresh.body.equals(small.subarray(10, 20)))
      const past = await ranged(clip, 'bytes=1000-')
      assert.equal(past.r.status, 416)
      assert.equal(past.r.headers.get('content-range'), 'bytes */1000')
      assert.equal(JSON.parse(past.body.toString()).error.code, 'range_not_satisfiable')
      // The whole file: several ranges, a range that does not parse, If-Range of another version.
      for (const [range, extra] of [
        ['bytes=0-1,5-6', {}],
        ['items=0-1', {}],
        ['bytes=5-2', {}],
        ['bytes=0-1', { 'if-range': '"another-version"' }],
      ] as const) {
        const r = await ranged(clip, range, extra)
        assert.equal(r.r.status, 200, range)
        assert.ok(r.body.equals(small), range)
      }
      assert.equal((await ranged(clip, 'bytes=0-1', { 'if-range': etag })).r.status, 206)
      // Larger than the small-file cache: read from the store as a range.
      const movie = await ranged(frame.replace('index.html', 'movie.mp4'), `bytes=${large.length - 11}-`)
      assert.equal(movie.r.status, 206)
      assert.equal(movie.body.toString(), 'tail-marker')
      // HTML is always whole (the shim is inserted), and says nothing of ranges.
      const html = await ranged(frame, 'bytes=0-3')
      assert.equal(html.r.status, 200)
      assert.equal(html.r.headers.get('accept-ranges'), null)
      assert.match(html.body.toString(), /storage-shim/)
    })

    test('the lean path answers cache hits exactly like the full route', async () => {
      const p = await mustPublish(
        h,
        owner,
        sampleBundle([
          { name: 'img/a.wasm', data: Buffer.from([0, 97, 115, 109]) },
          { name: 'bytes.bin', data: Buffer.from([0xff, 0x00, 0xe9, 0x80, 0xc3, 0x28, 0x0a]), method: 0 },
          { name: 'utf8.txt', data: 'été — ☃ 🎉\n' },
          { name: 'big.js', data: `// ${'x'.repeat(40_000)}\n` },
        ]),
      )
      const frame = frameOf(await (await fetch(`${h.base}/a/${p.artifact}`, { headers: owner })).text())
      for (const file of ['index.html', 'app.js', 'css/site.css', 'img/a.wasm', 'bytes.bin', 'utf8.txt', 'big.js']) {
        const url = frame.replace('index.html', file)
        const first = await fetchBoth(url, {}, 'node')
        const second = await fetchBoth(url)
        assert.equal(first.fast, false, `${file}: the first fetch takes the full route`)
        assert.equal(second.fast, true, `${file}: a repeated fetch takes the lean path`)
        assert.equal(second.r.status, 200)
        assert.deepEqual(comparable(second.r), comparable(first.r), file)
        assert.ok(second.body.equals(first.body), file)
        assert.match(second.r.headers.get('x-request-id')!, /^[0-9a-f-]{36}$/)
        assert.notEqual(second.r.headers.get('x-request-id'), first.r.headers.get('x-request-id'))
      }
      // The storage shim is inserted by both paths.
      const html = await fetchBoth(frame)
      assert.equal(html.fast, true)
      assert.match(html.body.toString(), /^<!doctype html><script src="\/__artsvc\/storage-shim.js"><\/script><html>/)
      assert.equal(Number(html.r.headers.get('content-length')), html.body.length)
      // A query string is ignored like the route does; `dir/` means its index.html.
      const q = await fetchBoth(`${frame.replace('index.html', 'app.js')}?v=1`)
      assert.equal(q.fast, true)
      assert.equal(q.r.headers.get('content-type'), 'text/javascript; charset=utf-8')
      const dir = await fetchBoth(frame.replace('index.html', ''))
      assert.equal(dir.fast, true)
      assert.ok(dir.body.equals(html.body))

      // HEAD and conditional requests: the same as the route's (route first, then lean path).
      h.svc.ctx.caches.invalidateLiveness()
      const headSlow = await fetchBoth(frame, { method: 'HEAD' }, 'node')
      const headFast = await fetchBoth(frame, { method: 'HEAD' })
      assert.deepEqual([headSlow.fast, headFast.fast], [false, true])
      assert.equal(headFast.r.status, 200)
      assert.deepEqual(comparable(headFast.r), comparable(headSlow.r))
      assert.equal(headFast.body.length, 0)
      assert.equal(Number(headFast.r.headers.get('content-length')), html.body.length)
      const etag = html.r.headers.get('etag')!
      h.svc.ctx.caches.invalidateLiveness()
      const notModSlow = await fetchBoth(frame, { headers: { 'if-none-match': etag } }, 'node')
      const notModFast = await fetchBoth(frame, { headers: { 'if-none-match': etag } })
      assert.deepEqual([notModSlow.fast, notModFast.fast], [false, true])
      assert.equal(notModFast.r.status, 304)
      assert.deepEqual(comparable(notModFast.r), comparable(notModSlow.r))

      // A file the version does not hold: the route's 404, for GET and HEAD alike.
      for (const method of ['GET', 'HEAD']) {
        const url = frame.replace('index.html', 'favicon.ico')
        h.svc.ctx.caches.invalidateLiveness()
        const slow = await fetchBoth(url, { method }, 'node')
        const fast = await fetchBoth(url, { method })
        assert.deepEqual([slow.fast, fast.fast, fast.r.status], [false, true, 404], method)
        assert.deepEqual(comparable(fast.r), comparable(slow.r), method)
        assert.ok(fast.body.equals(slow.body), method)
        if (method === 'GET') assert.equal(JSON.parse(fast.body.toString()).error.code, 'file_not_found')
        assert.equal(fast.r.headers.get('x-content-type-options'), 'nosniff')
      }

      // The kit's per-route metrics count lean-path responses too.
      const metrics = await (await fetch(`${h.base}/metrics`)).text()
      assert.match(metrics, /artsvc_http_requests_total\{method="GET",route="\/t\/:ticket\/\*",status="200"\} \d+/)
    })

    test('in the HTTP lane a first fetch is held while the caches fill, then answered by the lean path', async () => {
      const big = `// ${'y'.repeat(300 * 1024)}\n` // above SMALL_BLOB: streamed by the full route
      const p = await mustPublish(h, owner, sampleBundle([{ name: 'big.js', data: big }]))
      const frame = frameOf(await (await fetch(`${h.base}/a/${p.artifact}`, { headers: owner })).text())
      // Cold: the version's liveness, manifest and blobs are not cached yet. Several connections at once.
      const fast0 = h.svc.ctx.caches.fastResponses
      const [html, js, css] = await Promise.all(
        ['index.html', 'app.js', 'css/site.css'].map((f) => fetchBoth(frame.replace('index.html', f))),
      )
      assert.deepEqual([html!.r.status, js!.r.status, css!.r.status], [200, 200, 200])
      assert.equal(h.svc.ctx.caches.fastResponses - fast0, 3, 'all three answered by the lean path')
      assert.equal(js!.body.toString(), 'document.body.dataset.ready = "yes"\n')
      assert.match(html!.body.toString(), /^<!doctype html><script src="\/__artsvc\/storage-shim.js"><\/script><html>/)
      // The same answers as the lean path gives behind node:http, now that the caches are warm.
      for (const [f, lane] of [
        ['index.html', html!],
        ['css/site.css', css!],
      ] as const) {
        const node = await fetchBoth(frame.replace('index.html', f), {}, 'node')
        assert.equal(node.fast, true)
        assert.deepEqual(comparable(lane.r), comparable(node.r), f)
        assert.ok(lane.body.equals(node.body), f)
      }
      // HEAD and a conditional request on cold liveness: held for the check alone.
      h.svc.ctx.caches.invalidateLiveness()
      const head = await fetchBoth(frame, { method: 'HEAD' })
      assert.deepEqual([head.r.status, head.fast, head.body.length], [200, true, 0])
      h.svc.ctx.caches.invalidateLiveness()
      const etag = html!.r.headers.get('etag')!
      const notModified = await fetchBoth(frame, { headers: { 'if-none-match': etag } })
      assert.deepEqual([notModified.r.status, notModified.fast], [304, true])
      // What the lean path never answers still takes the full route after the wait.
      const large = await fetchBoth(frame.replace('index.html', 'big.js'))
      assert.deepEqual([large.r.status, large.fast, large.body.toString()], [200, false, big])
      // A file the version lacks is answered from the manifest the wait loaded.
      const missing = await fetchBoth(frame.replace('index.html', 'nope.js'))
      assert.deepEqual([missing.r.status, missing.fast], [404, true])
    })

    test("a missing file's 404 keeps a keep-alive connection in the HTTP lane", async () => {
      const p = await mustPublish(h, owner, sampleBundle())
      const frame = frameOf(await (await fetch(`${h.base}/a/${p.artifact}`, { headers: owner })).text())
      await fetchBoth(frame) // warm
      const handovers = async () => {
        const text = await (await fetch(`${h.base}/metrics`)).text()
        const count = /^artsvc_http_lane_handovers_total (\d+)/m.exec(text)
        assert.ok(count, 'the lane counts hand-overs')
        return Number(count[1])
      }
      const agent = new Agent({ keepAlive: true, maxSockets: 1 })
      const get = (path: string) =>
        new Promise<{ status: number; socket: unknown }>((resolve, reject) => {
          const u = new URL(frame.replace('index.html', path))
          request({ host: u.hostname, port: u.port, path: u.pathname, agent, headers: { host: u.host } }, (res) => {
            res.resume()
            res.on('end', () => resolve({ status: res.statusCode!, socket: res.socket }))
          })
            .on('error', reject)
            .end()
        })
      try {
        const before = await handovers()
        const fast0 = h.svc.ctx.caches.fastResponses
        const answers = [await get('favicon.ico'), await get('app.js'), await get('nope/'), await get('index.html')]
        assert.deepEqual(
          answers.map((a) => a.status),
          [404, 200, 404, 200],
        )
        assert.ok(
          answers.every((a) => a.socket === answers[0]!.socket),
          'one connection',
        )
        assert.equal(await handovers(), before, 'no connection handed to node:http')
        assert.equal(h.svc.ctx.caches.fastResponses - fast0, 4, 'all answered by the lean path')
      } finally {
        agent.destroy()
      }
    })

    test('the lean path never answers what the full route must decide', async () => {
      const p = await mustPublish(h, owner, sampleBundle([{ name: 'caf\u00e9.txt', data: 'accent' }]))
      const frame = frameOf(await (await fetch(`${h.base}/a/${p.artifact}`, { headers: owner })).text())
      await fetchBoth(frame)
      assert.equal((await fetchBoth(frame)).fast, true)
      const refusedBy = async (url: string, status: number, init: RequestInit = {}) => {
        const r = await fetchBoth(url, init)
        assert.equal(r.r.status, status, url)
        assert.equal(r.fast, false, url)
        return r
      }
      // Forged tickets, other hosts, other methods.
      await refusedBy(frame.replace(/\/t\/([A-Za-z0-9_-]{16})\./, '/t/AAAAAAAAAAAAAAAA.'), 403)
      await refusedBy(frame.replace(h.content, h.base), 404)
      const fast0 = h.svc.ctx.caches.fastResponses
      const misdirected = await new Promise<number>((resolve, reject) => {
        const u = new URL(frame)
        request(
          { host: '127.0.0.1', port: h.port, path: u.pathname, headers: { host: 'elsewhere.example' } },
          (res) => {
            res.resume()
            resolve(res.statusCode!)
          },
        )
          .on('error', reject)
          .end()
      })
      assert.equal(misdirected, 421)
      assert.equal(h.svc.ctx.caches.fastResponses, fast0)
      await refusedBy(frame, 404, { method: 'POST' })
      // Percent-encoded names take the full route and still work.
      const accent = await refusedBy(frame.replace('index.html', 'caf%C3%A9.txt'), 200)
      assert.equal(accent.body.toString(), 'accent')
      // Liveness older than its TTL is checked again: behind node:http by the full route (which
      // then refreshes it), in the lane while the request is held, and the lean path answers.
      clock.advance(1500)
      assert.equal((await fetchBoth(frame, {}, 'node')).fast, false)
      assert.equal((await fetchBoth(frame)).fast, true)
      clock.advance(1500)
      const rechecked = await fetchBoth(frame)
      assert.deepEqual([rechecked.r.status, rechecked.fast], [200, true])
      // Expired tickets are refused by the full route.
      clock.advance(h.config.viewerTicketTtl + 1000)
      try {
        await refusedBy(frame, 403)
      } finally {
        clock.advance(-(h.config.viewerTicketTtl + 1000 + 3000))
      }
    })

    test('a revoked share or deleted artifact stops lean-path answers at once', async () => {
      const admin = await bearer(backends.op, 'root-admin')
      assert.equal((await fetch(`${h.base}/api/v1/me`, { headers: admin })).status, 200)
      const p = await mustPublish(h, owner, sampleBundle())
      const share = await fetch(`${h.base}/api/v1/artifacts/${p.artifact}/shares`, {
        method: 'POST',
        headers: { ...owner, 'content-type': 'application/json' },
        body: '{}',
      })
      const { id, url } = (await share.json()) as { id: string; url: string }
      const opened = await fetch(url, { redirect: 'manual' })
      const cookie = opened.headers.getSetCookie()[0]!.split(';')[0]!
      const page = await fetch(`${h.base}/shared/${id}/`, { headers: { cookie } })
      const shareFrame = frameOf(await page.text())
      const ownerFrame = frameOf(await (await fetch(`${h.base}/a/${p.artifact}`, { headers: owner })).text())
      for (const f of [shareFrame, ownerFrame]) {
        await fetchBoth(f)
        assert.equal((await fetchBoth(f)).fast, true)
      }
      const revoke = await fetch(`${h.base}/api/v1/artifacts/${p.artifact}/shares/${id}`, {
        method: 'DELETE',
        headers: owner,
      })
      assert.equal(revoke.status, 204)
      assert.equal((await fetchBoth(shareFrame)).r.status, 403)
      assert.equal((await fetchBoth(ownerFrame)).r.status, 200)
      assert.equal((await fetchBoth(ownerFrame)).fast, true)
      const del = await fetch(`${h.base}/api/v1/admin/artifacts/${p.artifact}`, { method: 'DELETE', headers: admin })
      assert.equal(del.status, 204)
      const gone = await fetchBoth(ownerFrame)
      assert.equal(gone.r.status, 403)
      assert.equal(gone.fast, false)
    })

    test('cached liveness never outlasts a share expiry', async () => {
      const p = await mustPublish(h, owner, sampleBundle())
      const expiresAt = clock.now() + 10_000
      const share = await fetch(`${h.base}/api/v1/artifacts/${p.artifact}/shares`, {
        method: 'POST',
        headers: { ...owner, 'content-type': 'application/json' },
        body: JSON.stringify({ expires_at: new Date(expiresAt).toISOString() }),
      })
      assert.equal(share.status, 201)
      const { id, url } = (await share.json()) as { id: string; url: string }
      const cookie = (await fetch(url, { redirect: 'manual' })).headers.getSetCookie()[0]!.split(';')[0]!
      const frame = frameOf(await (await fetch(`${h.base}/shared/${id}/`, { headers: { cookie } })).text())
      const shift = expiresAt - clock.now() - 300
      clock.advance(shift) // 0.3 s before the expiry
      try {
        await fetchBoth(frame)
        assert.equal((await fetchBoth(frame)).fast, true)
        clock.advance(600) // past the expiry, within the one-second liveness TTL
        const late = await fetchBoth(frame)
        assert.equal(late.r.status, 403)
        assert.equal(late.fast, false)
      } finally {
        clock.advance(-(shift + 600))
      }
    })

    test('steady traffic renews liveness in its last half second, so answers never leave the lean path', async () => {
      const p = await mustPublish(h, owner, sampleBundle())
      const frame = frameOf(await (await fetch(`${h.base}/a/${p.artifact}`, { headers: owner })).text())
      const versionId = new URL(frame).pathname.split('/')[2]!.split('.')[0]!
      const caches = h.svc.ctx.caches
      await fetchBoth(frame)
      assert.equal((await fetchBoth(frame)).fast, true)
      const first = caches.liveUntil(`${versionId}/`)!
      try {
        clock.advance(300) // more than half a second left: nothing to renew
        assert.equal((await fetchBoth(frame)).fast, true)
        assert.equal(caches.liveUntil(`${versionId}/`), first)
        clock.advance(300) // 0.4 s left: answered from the entry, and renewed behind the answer
        assert.equal((await fetchBoth(frame)).fast, true)
        for (let i = 0; i < 200 && caches.liveUntil(`${versionId}/`) === first; i++)
          await new Promise((r) => setTimeout(r, 10))
        assert.equal(caches.liveUntil(`${versionId}/`), clock.now() + 1000)
        clock.advance(600) // past the first entry: the renewed one answers
        assert.equal((await fetchBoth(frame)).fast, true)
      } finally {
        clock.advance(-1200)
      }
    })
  })
}
