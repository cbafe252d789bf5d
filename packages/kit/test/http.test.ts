import assert from 'node:assert/strict'
import { once } from 'node:events'
import { writeFile } from 'node:fs/promises'
import { connect } from 'node:net'
import { PassThrough, type Readable, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { after, before, describe, test } from 'node:test'
import { Type } from 'typebox'
import { Agent, request } from 'undici'
import { createHttpApp, createLogger, defineErrors, type HttpApp, type HttpAppOptions } from '../src/index.ts'

const errors = defineErrors({
  item_locked: { status: 423, message: (id: string) => `item ${id} is locked` },
  busy: { status: 503, message: () => 'try later' },
})

const Item = Type.Object(
  {
    name: Type.String({ minLength: 1 }),
    count: Type.Integer({ minimum: 0 }),
    color: Type.Optional(Type.Union([Type.Literal('red'), Type.Literal('blue')])),
  },
  { additionalProperties: false },
)

interface Started {
  app: HttpApp
  base: string
  logs: () => Array<Record<string, unknown>>
}

/** Build an app with test routes, listen on a free loopback port and collect its log lines. */
async function start(options: Partial<HttpAppOptions> = {}, routes?: (app: HttpApp) => void): Promise<Started> {
  const stream = new PassThrough()
  let text = ''
  stream.on('data', (c: Buffer) => {
    text += c.toString('utf8')
  })
  const logger = createLogger({ name: 'testapp', destination: stream })
  const app = await createHttpApp({ name: 'testapp', logger, bodyLimit: 1024, ...options })
  routes?.(app)
  const address = await app.listen({ port: 0, host: '127.0.0.1' })
  const logs = () =>
    text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>)
  return { app, base: address, logs }
}

function defaultRoutes(app: HttpApp) {
  app.post('/v1/items', { schema: { body: Item, response: { 201: Item } } }, async (req, reply) => {
    return reply.code(201).send(req.body)
  })
  app.get(
    '/v1/items/:id',
    {
      schema: {
        params: Type.Object({ id: Type.String() }),
        querystring: Type.Object({ limit: Type.Optional(Type.Integer()) }),
      },
    },
    async (req) => ({ id: req.params.id, limit: req.query.limit ?? null, limitType: typeof req.query.limit }),
  )
  app.delete('/v1/items/:id', async (req) => {
    throw errors.item_locked.with(
      { cause: new Error('row lock held by tx 42'), headers: { 'retry-after': '5' } },
      (req.params as { id: string }).id,
    )
  })
  app.get('/v1/boom', async () => {
    throw new Error('database password=hunter2 exploded')
  })
  app.get('/v1/busy', async () => {
    throw errors.busy()
  })
  // The kernel's own "no space left on device", as a full disk gives it.
  app.get('/v1/full', async () => {
    await writeFile('/dev/full', 'x')
  })
}

async function call(base: string, path: string, init: RequestInit = {}) {
  const res = await fetch(base + path, init)
  const text = await res.text()
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    body = text
  }
  return { status: res.status, headers: res.headers, body, text }
}

const json = (body: unknown, method = 'POST'): RequestInit => ({
  method,
  headers: { 'content-type': 'application/json' },
  body: typeof body === 'string' ? body : JSON.stringify(body),
})

describe('createHttpApp over a real socket', () => {
  let s: Started
  before(async () => {
    s = await start({}, defaultRoutes)
  })
  after(() => s.app.close())

  test('JSON route with a TypeBox schema', async () => {
    const res = await call(s.base, '/v1/items', json({ name: 'a', count: 2, color: 'red' }))
    assert.equal(res.status, 201)
    assert.deepEqual(res.body, { name: 'a', count: 2, color: 'red' })
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/)
  })

  test('unknown body field is 400 invalid_request naming the field', async () => {
    const res = await call(s.base, '/v1/items', json({ name: 'a', count: 2, admin: true }))
    assert.equal(res.status, 400)
    assert.deepEqual(res.body, {
      error: { code: 'invalid_request', message: 'body has unknown field "admin"', path: 'body' },
    })
  })

  test('bad field value names the field', async () => {
    const res = await call(s.base, '/v1/items', json({ name: 'a', count: -1 }))
    assert.equal(res.status, 400)
    const err = (res.body as { error: { code: string; message: string; path: string } }).error
    assert.equal(err.code, 'invalid_request')
    assert.equal(err.path, 'body.count')
    assert.match(err.message, /^body\.count /)
  })

  test('enum-like values list what is allowed', async () => {
    const res = await call(s.base, '/v1/items', json({ name: 'a', count: 1, color: 'green' }))
    assert.equal(res.status, 400)
    assert.equal((res.body as { error: { code: string } }).error.code, 'invalid_request')
  })

  test('the body is not coerced: "1" for an integer is refused', async () => {
    const res = await call(s.base, '/v1/items', json({ name: 'a', count: '1' }))
    assert.equal(res.status, 400)
    const err = (res.body as { error: { code: string; path: string } }).error
    assert.equal(err.code, 'invalid_request')
    assert.equal(err.path, 'body.count')
  })

  test('the query string is coerced to the schema type', async () => {
    const res = await call(s.base, '/v1/items/x1?limit=5')
    assert.equal(res.status, 200)
    assert.deepEqual(res.body, { id: 'x1', limit: 5, limitType: 'number' })
    const bad = await call(s.base, '/v1/items/x1?limit=five')
    assert.equal(bad.status, 400)
    assert.equal((bad.body as { error: { path: string } }).error.path, 'querystring.limit')
  })

  test('body over the limit is 413 payload_too_large', async () => {
    const res = await call(s.base, '/v1/items', json({ name: 'x'.repeat(2000), count: 1 }))
    assert.equal(res.status, 413)
    assert.deepEqual(res.body, {
      error: { code: 'payload_too_large', message: 'request body exceeds the limit of 1024 bytes' },
    })
  })

  test('invalid JSON is 400 invalid_json', async () => {
    const res = await call(s.base, '/v1/items', json('{"name": '))
    assert.equal(res.status, 400)
    assert.equal((res.body as { error: { code: string } }).error.code, 'invalid_json')
    const empty = await call(s.base, '/v1/items', json(''))
    assert.equal(empty.status, 400)
    assert.equal((empty.body as { error: { code: string } }).error.code, 'invalid_json')
  })

  test('a content type the route cannot parse is 415', async () => {
    const res = await call(s.base, '/v1/items', {
      method: 'POST',
      headers: { 'content-type': 'text/csv' },
      body: 'a,b',
    })
    assert.equal(res.status, 415)
    assert.equal((res.body as { error: { code: string } }).error.code, 'unsupported_media_type')
  })

  test('unknown route is 404 not_found', async () => {
    const res = await call(s.base, '/v1/nothing?token=abc')
    assert.equal(res.status, 404)
    assert.deepEqual(res.body, { error: { code: 'not_found', message: 'no route for GET /v1/nothing' } })
  })

  test('wrong method on a known route is 405 with Allow', async () => {
    const res = await call(s.base, '/v1/items/abc', {
      method: 'PUT',
      body: '{}',
      headers: { 'content-type': 'application/json' },
    })
    assert.equal(res.status, 405)
    assert.equal(res.headers.get('allow'), 'DELETE, GET, HEAD')
    assert.deepEqual(res.body, {
      // The route's pattern, not the path: a path segment may be a secret (a hook's token).
      error: { code: 'method_not_allowed', message: 'method PUT is not allowed on /v1/items/:id' },
    })
    const post = await call(s.base, '/v1/items', { method: 'GET' })
    assert.equal(post.status, 405)
    assert.equal(post.headers.get('allow'), 'POST')
  })

  test('a thrown AppError keeps its status, code and headers; the cause is only logged', async () => {
    const res = await call(s.base, '/v1/items/x9', { method: 'DELETE' })
    assert.equal(res.status, 423)
    assert.deepEqual(res.body, { error: { code: 'item_locked', message: 'item x9 is locked' } })
    assert.equal(res.headers.get('retry-after'), '5')
    assert.doesNotMatch(res.text, /row lock/)
    const logged = s.logs().find((l) => l.msg === 'request refused' && l.code === 'item_locked')
    assert.ok(logged, 'the refusal and its cause are logged')
    assert.match(JSON.stringify(logged), /row lock held by tx 42/)
  })

  test('a coded 5xx keeps its code', async () => {
    const res = await call(s.base, '/v1/busy')
    assert.equal(res.status, 503)
    assert.deepEqual(res.body, { error: { code: 'busy', message: 'try later' } })
  })

  test('a plain Error is a 500 internal without message or stack', async () => {
    const res = await call(s.base, '/v1/boom')
    assert.equal(res.status, 500)
    assert.deepEqual(res.body, { error: { code: 'internal', message: 'internal error' } })
    assert.doesNotMatch(res.text, /hunter2|exploded|at |\.ts/)
    const logged = s.logs().find((l) => l.msg === 'request failed' && l.code === 'internal')
    assert.equal(logged?.level, 'error')
    assert.equal(logged?.status, 500)
    assert.match(JSON.stringify(logged), /exploded/, 'the real error is in the log for operators')
  })

  test('a full disk is a 503 unavailable with Retry-After, logged with its cause', async () => {
    const res = await call(s.base, '/v1/full')
    assert.equal(res.status, 503)
    assert.equal(res.headers.get('retry-after'), '5')
    assert.deepEqual(res.body, { error: { code: 'unavailable', message: 'storage is unavailable' } })
    const logged = s.logs().find((l) => l.msg === 'request failed' && l.code === 'unavailable')
    assert.equal(logged?.level, 'error')
    assert.match(JSON.stringify(logged), /ENOSPC/)
  })

  test('/healthz', async () => {
    const res = await call(s.base, '/healthz')
    assert.equal(res.status, 200)
    assert.deepEqual(res.body, { status: 'ok' })
  })

  test('x-request-id: a sane id is echoed, an insane one replaced', async () => {
    const sane = await fetch(`${s.base}/healthz`, { headers: { 'x-request-id': 'req-42.a:b_c' } })
    await sane.arrayBuffer()
    assert.equal(sane.headers.get('x-request-id'), 'req-42.a:b_c')
    const insane = await fetch(`${s.base}/healthz`, { headers: { 'x-request-id': 'a b<script>' } })
    await insane.arrayBuffer()
    const id = insane.headers.get('x-request-id') ?? ''
    assert.notEqual(id, 'a b<script>')
    assert.match(id, /^[0-9a-f-]{36}$/)
    const none = await fetch(`${s.base}/healthz`)
    await none.arrayBuffer()
    assert.match(none.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/)
    const line = s.logs().find((l) => l.request_id === 'req-42.a:b_c')
    assert.ok(line, 'the access log carries the request id')
  })

  test('access log lines name the route pattern, not the raw path', async () => {
    await call(s.base, '/v1/items/SECRET-TOKEN-123?limit=1')
    const lines = s.logs().filter((l) => l.msg === 'request')
    assert.ok(lines.some((l) => l.route === '/v1/items/:id' && l.status === 200 && l.method === 'GET'))
    assert.doesNotMatch(JSON.stringify(s.logs()), /SECRET-TOKEN-123/)
  })

  test('/metrics has the app prefix and route pattern labels, never raw paths', async () => {
    await call(s.base, '/v1/items/tok_SECRET987?limit=2')
    await call(s.base, '/v1/unknown/tok_SECRET654')
    const res = await call(s.base, '/metrics')
    assert.equal(res.status, 200)
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain/)
    assert.match(res.text, /^# TYPE testapp_http_requests_total counter$/m)
    assert.match(res.text, /testapp_http_requests_total\{method="GET",route="\/v1\/items\/:id",status="200"\} \d+/)
    assert.match(res.text, /testapp_http_requests_total\{method="GET",route="unmatched",status="404"\} \d+/)
    assert.match(res.text, /testapp_http_request_duration_seconds_bucket/)
    assert.match(res.text, /testapp_build_info\{version="0\.0\.0",node="v\d+/)
    assert.match(res.text, /^process_cpu_user_seconds_total /m)
    assert.doesNotMatch(res.text, /SECRET/)
  })

  test('/openapi.json lists the routes but not the built-in ones', async () => {
    const res = await call(s.base, '/openapi.json')
    assert.equal(res.status, 200)
    const doc = res.body as { openapi: string; info: { title: string }; paths: Record<string, Record<string, unknown>> }
    assert.equal(doc.openapi, '3.1.0')
    assert.equal(doc.info.title, 'testapp')
    assert.ok(doc.paths['/v1/items']?.post, 'POST /v1/items is listed')
    assert.ok(doc.paths['/v1/items/{id}']?.get, 'GET /v1/items/{id} is listed')
    assert.equal(doc.paths['/healthz'], undefined)
    assert.equal(doc.paths['/metrics'], undefined)
  })
})

test('an error answered before the body was read to its end closes the connection; the next request gets a new one', async () => {
  // A handler that streams the body to a disk that fills up (artsvc's upload): the pipeline
  // fails and destroys the request mid-body.
  const s = await start({}, (app) => {
    void app.register(async (raw) => {
      raw.removeAllContentTypeParsers()
      raw.addContentTypeParser('*', (_req, payload, done) => done(null, payload))
      raw.put('/v1/upload', { bodyLimit: 64 * 1024 * 1024 }, async (req) => {
        const full = new Writable({
          write(_chunk, _encoding, callback) {
            callback(Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' }))
          },
        })
        await pipeline(req.body as Readable, full)
        return { stored: true }
      })
    })
    app.get('/v1/after', async () => ({ ok: true }))
  })
  const agent = new Agent({ connections: 1, headersTimeout: 5000, bodyTimeout: 5000 })
  try {
    const upload = await request(`${s.base}/v1/upload`, {
      method: 'PUT',
      body: Buffer.alloc(4 * 1024 * 1024, 1),
      headers: { 'content-type': 'application/zip' },
      dispatcher: agent,
    })
    assert.equal(upload.statusCode, 503)
    assert.equal(upload.headers.connection, 'close')
    await upload.body.json()
    // Before, the connection stayed open with the request destroyed: this one waited for the
    // server's keep-alive timeout and then failed with ECONNRESET.
    const next = await request(`${s.base}/v1/after`, { dispatcher: agent })
    assert.equal(next.statusCode, 200)
    assert.deepEqual(await next.body.json(), { ok: true })
    // A request read to its end keeps its connection.
    const kept = await request(`${s.base}/v1/after`, { dispatcher: agent })
    assert.equal(kept.headers.connection, 'keep-alive')
    await kept.body.json()
  } finally {
    await agent.close()
    await s.app.close()
  }
})

describe('/readyz', () => {
  test('200 while every check passes, 503 naming the failing one', async () => {
    let healthy = true
    const s = await start()
    after(() => s.app.close())
    s.app.readiness.add('database', () => {
      if (!healthy) throw new Error('connection refused to 10.0.0.5 with password=x')
    })
    s.app.readiness.add('cache', async () => {})
    const ok = await call(s.base, '/readyz')
    assert.equal(ok.status, 200)
    assert.deepEqual(ok.body, { status: 'ready' })
    healthy = false
    const bad = await call(s.base, '/readyz')
    assert.equal(bad.status, 503)
    assert.deepEqual(bad.body, {
      error: { code: 'not_ready', message: 'not ready: database', checks: { database: 'database is unusable' } },
    })
    assert.doesNotMatch(bad.text, /10\.0\.0\.5|password/)
  })

  test('204 mode', async () => {
    const s = await start({ readyStatus: 204 })
    after(() => s.app.close())
    const res = await call(s.base, '/readyz')
    assert.equal(res.status, 204)
    assert.equal(res.text, '')
  })

  test('registering a check twice is a TypeError', async () => {
    const s = await start()
    after(() => s.app.close())
    s.app.readiness.add('x', () => {})
    assert.throws(() => s.app.readiness.add('x', () => {}), TypeError)
  })

  test('the built-in routes can be turned off', async () => {
    const s = await start({ routes: { health: false, metrics: false, openapi: false }, accessLog: false })
    after(() => s.app.close())
    for (const path of ['/healthz', '/readyz', '/metrics', '/openapi.json']) {
      assert.equal((await call(s.base, path)).status, 404, path)
    }
    assert.equal(s.logs().filter((l) => l.msg === 'request').length, 0, 'no access log lines when accessLog is false')
  })
})

describe('graceful shutdown', () => {
  test('close() lets an in-flight slow request finish', async () => {
    let entered!: () => void
    const inHandler = new Promise<void>((r) => {
      entered = r
    })
    let release!: () => void
    const released = new Promise<void>((r) => {
      release = r
    })
    let closing!: () => void
    const closeStarted = new Promise<void>((r) => {
      closing = r
    })
    const s = await start({}, (app) => {
      app.get('/slow', async () => {
        entered()
        await released
        return { done: true }
      })
      app.addHook('preClose', async () => {
        closing()
      })
    })
    const { statusCode, body } = await (async () => {
      const pending = request(`${s.base}/slow`)
      await inHandler
      const closed = s.app.close()
      await closeStarted
      release()
      const res = await pending
      const b = await res.body.json()
      await closed
      return { statusCode: res.statusCode, body: b }
    })()
    assert.equal(statusCode, 200)
    assert.deepEqual(body, { done: true })
    assert.equal(s.app.server.listening, false)
  })
})

describe('slow clients', () => {
  /** A raw connection that sends `head` and then nothing more; resolves with what the server sent before closing it. */
  async function stalled(base: string, head: string): Promise<{ answer: string; ms: number }> {
    const url = new URL(base)
    const socket = connect(Number(url.port), url.hostname)
    await once(socket, 'connect')
    const started = performance.now()
    socket.write(head)
    let answer = ''
    socket.on('data', (c: Buffer) => {
      answer += c.toString('latin1')
    })
    await once(socket, 'close')
    return { answer, ms: performance.now() - started }
  }

  test('a request whose body never finishes is answered 408 and closed after requestTimeoutMs', async (t) => {
    const s = await start({ requestTimeoutMs: 500 }, defaultRoutes)
    t.after(() => s.app.close())
    const body =
      'POST /v1/items HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n{"na'
    const { answer, ms } = await stalled(s.base, body)
    assert.match(answer, /^HTTP\/1\.1 408 /)
    assert.ok(ms < 5_000, `closed after ${ms} ms`)
    // The server goes on serving others.
    assert.equal((await request(`${s.base}/healthz`)).statusCode, 200)
  })

  test('an answer may take longer than requestTimeoutMs: only receiving the request is bounded', async (t) => {
    const s = await start({ requestTimeoutMs: 300 }, (app) => {
      app.get('/slow', async () => {
        await new Promise((r) => setTimeout(r, 1000))
        return { done: true }
      })
    })
    t.after(() => s.app.close())
    const res = await request(`${s.base}/slow`)
    assert.equal(res.statusCode, 200)
    assert.deepEqual(await res.body.json(), { done: true })
  })

  test('the default bounds a request at 5 min, as node:http does without Fastify', async (t) => {
    const s = await start()
    t.after(() => s.app.close())
    assert.equal(s.app.server.requestTimeout, 300_000)
    assert.equal(s.app.server.headersTimeout, 60_000)
  })
})

test("a browser at an unknown address gets the app's own page; API clients and other methods keep the JSON 404", async (t) => {
  const s = await start(
    {
      notFoundPage: (path) =>
        path.startsWith('/v1/')
          ? undefined
          : { html: `<p>nothing at ${path.length}</p>`, headers: { 'content-security-policy': "default-src 'none'" } },
    },
    defaultRoutes,
  )
  t.after(() => s.app.close())
  const browser = { headers: { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' } }
  const page = await call(s.base, '/nowhere?x=1', browser)
  assert.equal(page.status, 404)
  assert.match(page.headers.get('content-type') ?? '', /^text\/html/)
  assert.equal(page.text, '<p>nothing at 8</p>')
  assert.equal(page.headers.get('content-security-policy'), "default-src 'none'")
  // Under the API the app declines, and fetch()'s default Accept is not a browser's navigation.
  const api = await call(s.base, '/v1/nothing', browser)
  assert.equal(api.status, 404)
  assert.deepEqual(api.body, { error: { code: 'not_found', message: 'no route for GET /v1/nothing' } })
  const plain = await call(s.base, '/nowhere')
  assert.deepEqual(plain.body, { error: { code: 'not_found', message: 'no route for GET /nowhere' } })
  const post = await call(s.base, '/nowhere', { method: 'POST', ...browser })
  assert.equal(post.status, 404)
  assert.match(post.headers.get('content-type') ?? '', /json/)
  // A known route with another method stays a 405.
  const put = await call(s.base, '/v1/items/abc', { method: 'PUT', ...browser })
  assert.equal(put.status, 405)
})

test('an async not-found page is awaited; one that fails leaves the JSON 404 and a log line', async (t) => {
  const s = await start(
    {
      notFoundPage: async (path) => {
        await new Promise((resolve) => setTimeout(resolve, 5))
        if (path === '/broken') throw new Error('theme store down')
        return { html: '<p>themed</p>' }
      },
    },
    defaultRoutes,
  )
  t.after(() => s.app.close())
  const browser = { headers: { accept: 'text/html' } }
  const page = await call(s.base, '/somewhere', browser)
  assert.equal(page.status, 404)
  assert.equal(page.text, '<p>themed</p>')
  const broken = await call(s.base, '/broken', browser)
  assert.equal(broken.status, 404)
  assert.deepEqual(broken.body, { error: { code: 'not_found', message: 'no route for GET /broken' } })
  assert.ok(s.logs().some((l) => l.msg === 'not-found page failed; answering JSON'))
})

test('a closed app refuses new connections', async () => {
  const s = await start()
  await s.app.close()
  await assert.rejects(request(`${s.base}/healthz`), (err: Error & { code?: string }) => {
    assert.equal(err.code, 'ECONNREFUSED')
    return true
  })
})

const FAST_HEADERS = ['content-type', 'text/plain', 'content-length', '4']

describe('setFastPath', () => {
  let s: Started
  before(async () => {
    s = await start({}, (app) => {
      defaultRoutes(app)
      app.setFastPath((req) => {
        if (req.url === '/fast/boom') throw new Error('fast path bug')
        if (req.url === '/fast/bad-header')
          return { status: 200, headers: ['x-bad', 'a\r\nb'], body: 'no', route: '/x' }
        if (!req.url?.startsWith('/fast/')) return undefined
        return { status: 200, headers: FAST_HEADERS, body: 'fast', route: '/fast/:name' }
      })
    })
  })
  after(() => s.app.close())

  test('answers what it takes, with the request id, metrics and the access line of a route', async () => {
    const res = await call(s.base, '/fast/secret-name', { headers: { 'x-request-id': 'fast-1' } })
    assert.equal(res.status, 200)
    assert.equal(res.text, 'fast')
    assert.equal(res.headers.get('x-request-id'), 'fast-1')
    const line = s.logs().find((l) => l.msg === 'request' && l.request_id === 'fast-1')
    assert.ok(line, 'an access line for the fast answer')
    assert.equal(line.route, '/fast/:name')
    assert.equal(line.status, 200)
    assert.equal(typeof line.ms, 'number')
    const metrics = await call(s.base, '/metrics')
    assert.match(metrics.text, /testapp_http_requests_total\{method="GET",route="\/fast\/:name",status="200"\} 1/)
    assert.match(metrics.text, /testapp_http_request_duration_seconds_count\{method="GET",route="\/fast\/:name"\} 1/)
    assert.doesNotMatch(metrics.text, /secret-name/)
  })

  test('everything it declines goes to Fastify unchanged', async () => {
    const res = await call(s.base, '/v1/items/7?limit=3')
    assert.equal(res.status, 200)
    assert.deepEqual(res.body, { id: '7', limit: 3, limitType: 'number' })
    const missing = await call(s.base, '/nothing-here')
    assert.equal(missing.status, 404)
  })

  test('a fast path that throws before answering leaves the request to Fastify', async () => {
    const res = await call(s.base, '/fast/boom')
    assert.equal(res.status, 404, 'Fastify answers (no such route)')
    assert.ok(s.logs().some((l) => l.msg === 'fast path failed; the full path answers'))
  })

  test('an answer with a header node:http would refuse goes to Fastify instead', async () => {
    const res = await call(s.base, '/fast/bad-header')
    assert.equal(res.status, 404, 'Fastify answers (no such route)')
    assert.ok(s.logs().filter((l) => l.msg === 'fast path failed; the full path answers').length >= 2)
    // The server is still fine.
    assert.equal((await call(s.base, '/fast/again')).text, 'fast')
  })

  test('a second fast path is a TypeError', () => {
    assert.throws(() => s.app.setFastPath(() => undefined), TypeError)
  })
})
