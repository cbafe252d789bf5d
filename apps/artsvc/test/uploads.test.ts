/**
 * The upload flow, upload tokens, bad input, bundle limits, concurrent commits and the
 * content origin's responses, on SQLite and PostgreSQL.
 */
import assert from 'node:assert/strict'
import { readdirSync, rmSync, statSync } from 'node:fs'
import { type ClientRequest, request } from 'node:http'
import { join } from 'node:path'
import { test } from 'node:test'
import { setTimeout as delay } from 'node:timers/promises'
import { type ApiSuite, apiSuites, json } from './helpers/api-suite.ts'
import { mustPublish, publishZip } from './helpers/harness.ts'
import { buildZip, sampleBundle } from './helpers/zip-builder.ts'

apiSuites('uploads', (s: ApiSuite) => {
  test('the upload flow publishes immutable numbered versions', async () => {
    const v1 = await mustPublish(s.h, s.auth.owner, sampleBundle(), { title: 'Flow' })
    assert.equal(v1.version, 1)
    assert.equal(v1.url, `${s.h.base}/a/${v1.artifact}`)
    const v2 = await mustPublish(s.h, s.auth.owner, sampleBundle([{ name: 'extra.txt', data: 'two' }]), {
      title: 'Flow 2',
      artifact: v1.artifact,
    })
    assert.equal(v2.version, 2)
    const detail = await s.call('owner', 'GET', `/api/v1/artifacts/${v1.artifact}`)
    assert.equal(detail.status, 200)
    assert.equal(detail.body.title, 'Flow 2')
    assert.deepEqual(
      detail.body.versions.map((v: { number: number }) => v.number),
      [2, 1],
    )
    const one = await s.call('owner', 'GET', `/api/v1/artifacts/${v1.artifact}/versions/1`)
    assert.deepEqual(
      one.body.files.map((f: { path: string }) => f.path),
      ['app.js', 'css/site.css', 'index.html'],
    )
    const file = one.body.files.find((f: { path: string }) => f.path === 'index.html')
    assert.equal(file.content_type, 'text/html; charset=utf-8')
    assert.match(file.sha256, /^[0-9a-f]{64}$/)
    const two = await s.call('owner', 'GET', `/api/v1/artifacts/${v1.artifact}/versions/2`)
    assert.equal(two.body.files.length, 4)
    assert.equal((await s.call('owner', 'GET', `/api/v1/artifacts/${v1.artifact}/versions/3`)).status, 404)
    // A service account (client-credentials token) owns its own uploads.
    const service = { authorization: `Bearer ${await s.backends.op.clientCredentialsToken('artsvc:mcp')}` }
    const svcArt = await mustPublish(s.h, service, sampleBundle(), { title: 'CI build' })
    const mine = await fetch(`${s.h.base}/api/v1/artifacts`, { headers: service })
    const list = (await mine.json()) as { artifacts: { id: string; role: string }[] }
    assert.deepEqual(
      list.artifacts.map((a) => [a.id, a.role]),
      [[svcArt.artifact, 'owner']],
    )
  })

  test('upload tokens: header or Upload scheme only, never the query; only PUT; hashed at rest', async () => {
    const created = await s.call('owner', 'POST', '/api/v1/artifacts/uploads', { title: 'T', entrypoint: 'index.html' })
    assert.equal(created.status, 201)
    const { id, upload_token: token, upload_url: uploadUrl } = created.body
    assert.match(token, /^[A-Za-z0-9_-]{43}$/)
    const zip = new Uint8Array(sampleBundle())
    const put = (headers: Record<string, string>, url = uploadUrl, method = 'PUT') =>
      fetch(url, { method, headers, body: method === 'PUT' ? zip : undefined })
    assert.equal((await put({})).status, 401)
    assert.equal((await put({ 'x-artsvc-upload-token': 'wrong' })).status, 401)
    const q = await put({}, `${uploadUrl}?token=${token}`)
    assert.equal(q.status, 400)
    assert.equal((await json(q)).error.code, 'token_in_query')
    assert.equal((await put({ 'x-artsvc-upload-token': token }, `${uploadUrl}?upload_token=${token}`)).status, 400)
    assert.equal((await fetch(uploadUrl, { method: 'POST', headers: { 'x-artsvc-upload-token': token } })).status, 405)
    assert.equal((await fetch(uploadUrl, { headers: { 'x-artsvc-upload-token': token } })).status, 405)
    const ok = await put({ authorization: `Upload ${token}` })
    assert.equal(ok.status, 200)
    assert.equal((await json(ok)).size, zip.length)
    // Commit needs the token and the same signed-in account.
    assert.equal((await s.call('owner', 'POST', `/api/v1/uploads/${id}/commit`)).status, 401)
    assert.equal(
      (await s.call('anon', 'POST', `/api/v1/uploads/${id}/commit`, undefined, { 'x-artsvc-upload-token': token }))
        .status,
      401,
    )
    assert.equal(
      (await s.call('other', 'POST', `/api/v1/uploads/${id}/commit`, undefined, { 'x-artsvc-upload-token': token }))
        .status,
      403,
    )
    assert.equal(
      (
        await s.call('owner', 'POST', `/api/v1/uploads/${id}/commit?t=${token}`, undefined, {
          'x-artsvc-upload-token': token,
        })
      ).status,
      400,
    )
    const done = await s.call('owner', 'POST', `/api/v1/uploads/${id}/commit`, undefined, {
      'x-artsvc-upload-token': token,
    })
    assert.equal(done.status, 201)
    const again = await s.call('owner', 'POST', `/api/v1/uploads/${id}/commit`, undefined, {
      'x-artsvc-upload-token': token,
    })
    assert.equal(again.status, 409)
    assert.equal((await put({ 'x-artsvc-upload-token': token })).status, 409)
    const row = await s.h.svc.ctx.database.db
      .selectFrom('uploads')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirstOrThrow()
    assert.notEqual(row.token_hash, token)
    assert.ok(!JSON.stringify(row).includes(token))
  })

  test('bad input is refused with a clear 4xx and nothing is stored', async () => {
    const before = await s.h.svc.ctx.database.db
      .selectFrom('artifacts')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow()
    for (const body of [
      {},
      { title: '', entrypoint: 'index.html' },
      { title: 'x', entrypoint: '../x' },
      { title: 'x', entrypoint: 'index.html', extra: 1 },
    ]) {
      const r = await s.call('owner', 'POST', '/api/v1/artifacts/uploads', body)
      assert.equal(r.status, 400, JSON.stringify(body))
      assert.match(r.body.error.code, /^(invalid_request|invalid_entrypoint)$/)
    }
    const hostile = await publishZip(
      s.h,
      s.auth.owner,
      buildZip([
        { name: 'index.html', data: 'x' },
        { name: '../../evil', data: 'x' },
      ]),
    )
    assert.equal(hostile.status, 422)
    assert.equal((hostile.body.error as { reason: string }).reason, 'path_traversal')
    const missing = await publishZip(s.h, s.auth.owner, sampleBundle(), { entrypoint: 'nope.html' })
    assert.equal((missing.body.error as { reason: string }).reason, 'missing_entrypoint')
    const after = await s.h.svc.ctx.database.db
      .selectFrom('artifacts')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow()
    assert.equal(Number(after.n), Number(before.n))
    // An oversized body is cut off at the limit.
    const created = await s.call('owner', 'POST', '/api/v1/artifacts/uploads', {
      title: 'big',
      entrypoint: 'index.html',
    })
    const big = await fetch(created.body.upload_url, {
      method: 'PUT',
      headers: { 'x-artsvc-upload-token': created.body.upload_token },
      body: new Uint8Array(s.h.config.maxBundleBytes + 1),
    })
    assert.equal(big.status, 413)
    assert.equal((await json(big)).error.code, 'bundle_too_large')
    assert.deepEqual(
      readdirSync(s.h.svc.ctx.stagingDir).filter((f) => f.startsWith(created.body.id)),
      [],
    )
    // A zero-byte PUT names its reason like every other bundle refusal.
    const empty = await fetch(created.body.upload_url, {
      method: 'PUT',
      headers: { 'x-artsvc-upload-token': created.body.upload_token },
      body: new Uint8Array(0),
    })
    assert.equal(empty.status, 422)
    const emptyError = (await json(empty)).error
    assert.deepEqual([emptyError.code, emptyError.reason], ['bundle_invalid', 'empty_body'])
    // A NUL character in a title is a 400 on both databases (PostgreSQL answered 500).
    const nul = await s.call('owner', 'POST', '/api/v1/artifacts/uploads', {
      title: 'a\u0000b',
      entrypoint: 'index.html',
    })
    assert.equal(nul.status, 400)
    assert.equal(nul.body.error.code, 'invalid_request')
  })

  test('content origin: types, nosniff, sandboxing CSP, CORS for the opaque origin, HEAD and ETag', async () => {
    const p = await mustPublish(
      s.h,
      s.auth.owner,
      sampleBundle([
        { name: 'm.wasm', data: Buffer.from([0, 97, 115, 109, 1, 0, 0, 0]), method: 0 },
        { name: 'data.json', data: '{}' },
        { name: 'x.unknownext', data: 'x' },
      ]),
    )
    const page = await fetch(`${s.h.base}/a/${p.artifact}`, { headers: s.auth.owner })
    const html = await page.text()
    assert.match(page.headers.get('content-security-policy')!, new RegExp(`frame-src ${s.h.content}`))
    assert.equal(page.headers.get('x-frame-options'), 'DENY')
    assert.match(html, /sandbox="allow-scripts allow-forms allow-popups allow-modals allow-downloads"/)
    assert.doesNotMatch(html, /allow-same-origin/)
    const frame = /<iframe[^>]*src="([^"]+)"/.exec(html)![1]!.replaceAll('&amp;', '&')
    const types: Record<string, string> = {
      'index.html': 'text/html; charset=utf-8',
      'app.js': 'text/javascript; charset=utf-8',
      'css/site.css': 'text/css; charset=utf-8',
      'm.wasm': 'application/wasm',
      'data.json': 'application/json; charset=utf-8',
      'x.unknownext': 'application/octet-stream',
    }
    for (const [file, type] of Object.entries(types)) {
      const r = await fetch(frame.replace('index.html', file))
      await r.arrayBuffer()
      assert.equal(r.status, 200, file)
      assert.equal(r.headers.get('content-type'), type, file)
      assert.equal(r.headers.get('x-content-type-options'), 'nosniff')
      assert.equal(r.headers.get('access-control-allow-origin'), '*')
      const csp = r.headers.get('content-security-policy')!
      assert.match(csp, /^sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads;/)
      assert.doesNotMatch(csp, /allow-same-origin/)
      assert.match(csp, new RegExp(`frame-ancestors ${s.h.base}`))
      assert.match(csp, new RegExp(`connect-src ${s.h.content}(;|$)`))
    }
    const head = await fetch(frame, { method: 'HEAD' })
    const get = await fetch(frame)
    const body = await get.arrayBuffer()
    assert.equal(head.status, 200)
    assert.equal(Number(head.headers.get('content-length')), body.byteLength)
    const etag = get.headers.get('etag')!
    assert.equal((await fetch(frame, { headers: { 'if-none-match': etag } })).status, 304)
    assert.equal((await fetch(frame.replace('index.html', 'nope.js'))).status, 404)
    const unicode = await mustPublish(s.h, s.auth.owner, sampleBundle([{ name: 'données/été 1.txt', data: 'unicode' }]))
    const upage = await (await fetch(`${s.h.base}/a/${unicode.artifact}`, { headers: s.auth.owner })).text()
    const uframe = /<iframe[^>]*src="([^"]+)"/.exec(upage)![1]!.replaceAll('&amp;', '&')
    const u = await fetch(uframe.replace('index.html', 'donn%C3%A9es/%C3%A9t%C3%A9%201.txt'))
    assert.equal(await u.text(), 'unicode')
    assert.equal((await fetch(frame.replace('index.html', '../../etc/passwd'))).status, 404)
    // A ticket for one version cannot be bent to another: the MAC covers the version.
    const forged = frame.replace(/\/t\/([A-Za-z0-9_-]{16})\./, '/t/AAAAAAAAAAAAAAAA.')
    assert.equal((await fetch(forged)).status, 403)
  })

  test('uploads without Content-Length are cut off at the limit too; two commits of one upload publish once', async () => {
    const created = await s.call('owner', 'POST', '/api/v1/artifacts/uploads', {
      title: 'chunked',
      entrypoint: 'index.html',
    })
    const chunk = new Uint8Array(1024 * 1024)
    let sent = 0
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent > s.h.config.maxBundleBytes + 2 * chunk.length) return controller.close()
        sent += chunk.length
        controller.enqueue(chunk)
      },
    })
    const big = await fetch(created.body.upload_url, {
      method: 'PUT',
      headers: { 'x-artsvc-upload-token': created.body.upload_token },
      body: stream,
      duplex: 'half',
    } as RequestInit).catch((err: Error) => err)
    if (big instanceof Response) assert.equal(big.status, 413)
    assert.deepEqual(
      readdirSync(s.h.svc.ctx.stagingDir).filter((f) => f.startsWith(created.body.id)),
      [],
    )
    // The session still works after a refused body.
    const ok = await fetch(created.body.upload_url, {
      method: 'PUT',
      headers: { 'x-artsvc-upload-token': created.body.upload_token },
      body: new Uint8Array(sampleBundle()),
    })
    assert.equal(ok.status, 200)
    const commit = () =>
      s.call('owner', 'POST', `/api/v1/uploads/${created.body.id}/commit`, undefined, {
        'x-artsvc-upload-token': created.body.upload_token,
      })
    const results = await Promise.all([commit(), commit(), commit()])
    assert.deepEqual(results.map((r) => r.status).sort(), [201, 409, 409])
    const versions = await s.h.svc.ctx.database.db
      .selectFrom('versions')
      .select('id')
      .where('upload_id', '=', created.body.id)
      .execute()
    assert.equal(versions.length, 1)
  })

  test('a PUT interrupted mid-body can be retried; a newer PUT takes over; a committed upload stays fixed', async () => {
    const created = await s.call('owner', 'POST', '/api/v1/artifacts/uploads', {
      title: 'retry',
      entrypoint: 'index.html',
    })
    const { id, upload_url: url, upload_token: token } = created.body
    const db = s.h.svc.ctx.database.db
    const state = async () =>
      (await db.selectFrom('uploads').select(['state', 'zip_sha256']).where('id', '=', id).executeTakeFirstOrThrow())
        .state
    /** Start a chunked PUT, send the first half of `zip`, wait until the server is receiving it. */
    const halfPut = async (zip: Buffer) => {
      let answer: (r: { status: number; body: string }) => void = () => {}
      const answered = new Promise<{ status: number; body: string } | Error>((resolve) => {
        answer = resolve
      })
      const req: ClientRequest = request(url, { method: 'PUT', headers: { 'x-artsvc-upload-token': token } }, (res) => {
        let body = ''
        res.setEncoding('utf8')
        res.on('data', (c: string) => {
          body += c
        })
        res.on('end', () => answer({ status: res.statusCode!, body }))
      })
      req.on('error', (err) => answer(err as never))
      req.write(zip.subarray(0, zip.length >> 1))
      const stagedParts = () => readdirSync(s.h.svc.ctx.stagingDir).filter((f) => f.startsWith(`${id}.part-`))
      const before = stagedParts().length
      while (stagedParts().length === before) await delay(5)
      assert.equal(await state(), 'receiving')
      return { req, answered, rest: zip.subarray(zip.length >> 1) }
    }
    const put = (zip: Buffer) =>
      fetch(url, { method: 'PUT', headers: { 'x-artsvc-upload-token': token }, body: new Uint8Array(zip) })
    const commit = () =>
      s.call('owner', 'POST', `/api/v1/uploads/${id}/commit`, undefined, { 'x-artsvc-upload-token': token })

    // 1. The client goes away mid-body: the session is usable again at once.
    const first = sampleBundle([{ name: 'which.txt', data: 'first' }])
    const aborted = await halfPut(first)
    aborted.req.destroy()
    await aborted.answered
    for (let i = 0; i < 200 && (await state()) === 'receiving'; i++) await delay(5)
    assert.equal(await state(), 'open')
    assert.equal((await commit()).status, 409, 'nothing to commit yet')
    const second = sampleBundle([{ name: 'which.txt', data: 'second' }])
    const ok = await put(second)
    assert.equal(ok.status, 200)
    const okBody = (await ok.json()) as { sha256: string }
    assert.equal(await state(), 'received')

    // 2. A PUT that hangs (or whose node died) does not block a retry: the newer PUT takes
    // over; the older one, finishing later, is refused and changes nothing.
    const third = sampleBundle([{ name: 'which.txt', data: 'third' }])
    const stalled = await halfPut(sampleBundle([{ name: 'which.txt', data: 'stalled' }]))
    assert.equal((await commit()).status, 409, 'no commit while a PUT is receiving')
    const retry = await put(third)
    assert.equal(retry.status, 200)
    const retryBody = (await retry.json()) as { sha256: string }
    assert.notEqual(retryBody.sha256, okBody.sha256)
    stalled.req.end(stalled.rest)
    const late = await stalled.answered
    assert.ok(!(late instanceof Error))
    assert.equal(late.status, 409)
    assert.equal(JSON.parse(late.body).error.code, 'upload_in_progress')
    const row = await db.selectFrom('uploads').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
    assert.equal(row.state, 'received')
    assert.equal(row.zip_sha256, retryBody.sha256)
    // Only the current bundle is left in staging (the replaced and the refused ones are gone).
    assert.deepEqual(
      readdirSync(s.h.svc.ctx.stagingDir).filter((f) => f.startsWith(id)),
      [`${id}.${retryBody.sha256}.zip`],
    )

    // 3. Commit publishes the newest complete bundle; afterwards the upload is fixed.
    const done = await commit()
    assert.equal(done.status, 201)
    const frame = /<iframe[^>]*src="([^"]+)"/
      .exec(await (await fetch(`${s.h.base}/a/${done.body.artifact.id}`, { headers: s.auth.owner })).text())![1]!
      .replaceAll('&amp;', '&')
    assert.equal(await (await fetch(frame.replace('index.html', 'which.txt'))).text(), 'third')
    const after = await put(first)
    assert.equal(after.status, 409)
    assert.equal(((await after.json()) as { error: { code: string } }).error.code, 'upload_committed')
    assert.equal(await state(), 'committed')
  })

  test('a commit whose staged bundle is gone asks for the upload again', async () => {
    const created = await s.call('owner', 'POST', '/api/v1/artifacts/uploads', {
      title: 'gone',
      entrypoint: 'index.html',
    })
    const { id, upload_url: url, upload_token: token } = created.body
    const put = () =>
      fetch(url, { method: 'PUT', headers: { 'x-artsvc-upload-token': token }, body: new Uint8Array(sampleBundle()) })
    const { sha256 } = (await (await put()).json()) as { sha256: string }
    rmSync(join(s.h.svc.ctx.stagingDir, `${id}.${sha256}.zip`))
    const commit = () =>
      s.call('owner', 'POST', `/api/v1/uploads/${id}/commit`, undefined, { 'x-artsvc-upload-token': token })
    const refused = await commit()
    assert.equal(refused.status, 409)
    assert.equal(refused.body.error.code, 'upload_not_received')
    assert.equal((await put()).status, 200)
    assert.equal((await commit()).status, 201)
  })

  test('storage folders, blobs, manifests and the SQLite database are owner-only (0700/0600)', async () => {
    const umask = process.umask(0o022)
    try {
      await mustPublish(s.h, s.auth.owner, sampleBundle([{ name: 'private.txt', data: 'only the owner' }]))
    } finally {
      process.umask(umask)
    }
    const seen = { dirs: 0, files: 0 }
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name)
        const mode = statSync(path).mode & 0o777
        if (entry.isDirectory()) {
          assert.equal(mode, 0o700, path)
          seen.dirs++
          walk(path)
        } else {
          assert.equal(mode, 0o600, path)
          seen.files++
        }
      }
    }
    walk(s.h.root)
    assert.ok(seen.dirs >= 3 && seen.files >= 2, JSON.stringify(seen))
  })

  test('an expired upload session is refused', async () => {
    const created = await s.call('owner', 'POST', '/api/v1/artifacts/uploads', {
      title: 'late',
      entrypoint: 'index.html',
    })
    s.clock.advance(s.h.config.uploadTtl + 1000)
    try {
      const r = await fetch(created.body.upload_url, {
        method: 'PUT',
        headers: { 'x-artsvc-upload-token': created.body.upload_token },
        body: new Uint8Array(sampleBundle()),
      })
      assert.equal(r.status, 410)
    } finally {
      s.clock.advance(-(s.h.config.uploadTtl + 1000))
    }
  })
})
