/**
 * The HTTP lane of a fast path (`src/http-lane.ts`): answers byte for byte like node:http,
 * hands everything outside its subset to node:http so that both agree on every request
 * boundary (differential tests against a server without a lane), and holds connections the
 * way node:http does (keep-alive timeout, close, back-pressure, resets, TLS).
 */
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { IncomingMessage } from 'node:http'
import { connect as netConnect, type Socket } from 'node:net'
import { PassThrough } from 'node:stream'
import { after, before, describe, test } from 'node:test'
import { connect as tlsConnect } from 'node:tls'
import { createTestCa } from '@gatehouse/testkit'
import fc from 'fast-check'
import { parseLaneRequest } from '../src/http-lane.ts'
import {
  createHttpApp,
  createLogger,
  type FastAnswer,
  type FastRequest,
  type FastWarm,
  type HttpApp,
} from '../src/index.ts'

const TEXT = ['content-type', 'text/plain', 'content-length', '4']
const BYTES_BODY = Buffer.from([0, 1, 2, 255, 254, 10, 13])
const BYTES = ['content-type', 'application/octet-stream', 'content-length', String(BYTES_BODY.length)]
const NOT_MODIFIED = ['etag', '"v1"']
const BIG_BODY = 'b'.repeat(64 * 1024)
const BIG = ['content-type', 'text/plain', 'content-length', String(BIG_BODY.length)]

/** The fast path under test: `/fast/*` answers `lane` (and a few shapes); the rest is Fastify's. */
function fastPath(req: { method?: string; url?: string; headers: Record<string, unknown> }): FastAnswer | undefined {
  if (req.method !== 'GET' && req.method !== 'HEAD') return undefined
  const url = req.url ?? ''
  if (!url.startsWith('/fast/')) return undefined
  if (url === '/fast/bytes') return { status: 200, headers: BYTES, body: BYTES_BODY, route: '/fast/:name' }
  if (url === '/fast/big') return { status: 200, headers: BIG, body: BIG_BODY, route: '/fast/:name' }
  if (url === '/fast/etag' && req.headers['if-none-match'] === '"v1"') {
    return { status: 304, headers: NOT_MODIFIED, route: '/fast/:name' }
  }
  if (url === '/fast/declined') return undefined
  return { status: 200, headers: TEXT, body: 'lane', route: '/fast/:name' }
}

interface App {
  app: HttpApp
  port: number
  logs: () => string
}

async function startApp(lane: boolean, https?: { key: Buffer; cert: Buffer }, warm?: FastWarm): Promise<App> {
  // Both servers have the fast path; only one has the lane in front of node:http.
  const stream = new PassThrough()
  let text = ''
  stream.on('data', (c: Buffer) => {
    text += c.toString('utf8')
  })
  const app = await createHttpApp({
    name: 'laneapp',
    logger: createLogger({ name: 'laneapp', destination: stream }),
    ...(https ? { https } : {}),
  })
  // The same answers from a Fastify route, so the server without a lane answers the same requests.
  app.get('/fast/*', async (req, reply) => {
    if (req.url === '/fast/etag' && req.headers['if-none-match'] === '"v1"') return reply.code(304).send()
    return reply.type('text/plain').send('route')
  })
  app.post('/fast/*', async () => 'posted')
  app.setFastPath(fastPath, { lane, ...(warm ? { warm } : {}) })
  await app.listen({ port: 0, host: '127.0.0.1' })
  return { app, port: (app.server.address() as { port: number }).port, logs: () => text }
}

/** Send `chunks` (with a pause between them) and read until the server closes or `ms` pass. */
async function exchange(port: number, chunks: (string | Buffer)[], o: { tls?: Buffer; ms?: number } = {}) {
  const socket: Socket = o.tls
    ? tlsConnect({ port, host: '127.0.0.1', ca: o.tls, servername: 'localhost' })
    : netConnect({ port, host: '127.0.0.1' })
  await once(socket, o.tls ? 'secureConnect' : 'connect')
  const got: Buffer[] = []
  socket.on('data', (d: Buffer) => got.push(d))
  socket.on('error', () => {})
  const closed = once(socket, 'close')
  for (const [i, chunk] of chunks.entries()) {
    if (i > 0) await new Promise((r) => setTimeout(r, 30))
    socket.write(chunk)
  }
  const timer = setTimeout(() => socket.destroy(), o.ms ?? 5000)
  await closed
  clearTimeout(timer)
  return Buffer.concat(got).toString('latin1')
}

const statuses = (raw: string) => [...raw.matchAll(/HTTP\/1\.[01] (\d{3}) /g)].map((m) => Number(m[1]))
const withoutDate = (raw: string) =>
  raw
    .replace(/\r\nDate: [^\r]*/g, '\r\nDate: -')
    .replace(/\r\nx-request-id: [0-9a-f-]{36}\r\n/g, '\r\nx-request-id: -\r\n')
const get = (path: string, extra = '') => `GET ${path} HTTP/1.1\r\nhost: x\r\n${extra}\r\n`
const LAST = get('/fast/last', 'connection: close\r\n')

describe('the HTTP lane', () => {
  let lane: App
  let plain: App
  /** A lane whose warming never helps: every declined request is held, asked again, then handed over. */
  let laneWarm: App
  before(async () => {
    lane = await startApp(true)
    plain = await startApp(false)
    laneWarm = await startApp(true, undefined, () => new Promise((r) => setTimeout(r, 1)))
  })
  after(async () => {
    await lane.app.close()
    await plain.app.close()
    await laneWarm.app.close()
  })

  test('answers byte for byte what node:http sends for the same fast-path answer', async () => {
    for (const req of [
      get('/fast/a', 'x-request-id: same-id\r\n'),
      get('/fast/bytes', 'x-request-id: same-id\r\n'),
      get('/fast/etag', 'if-none-match: "v1"\r\nx-request-id: same-id\r\n'),
      `HEAD /fast/a HTTP/1.1\r\nhost: x\r\nx-request-id: same-id\r\n\r\n`,
      get('/fast/a', 'x-request-id: same-id\r\nconnection: close\r\n'),
    ]) {
      const close = req.includes('connection: close') ? '' : LAST
      // Whole: the lane answers. Split inside the head: node:http reads it and calls the same fast path.
      const viaLane = await exchange(lane.port, [req + close])
      const viaNode = await exchange(lane.port, [req.slice(0, 10), req.slice(10) + close])
      assert.equal(withoutDate(viaLane), withoutDate(viaNode), req)
      assert.match(viaLane, /\r\nx-request-id: same-id\r\n/)
      assert.doesNotMatch(viaLane, /route/)
    }
    // Body bytes above 0x7f survive the latin1 round trip.
    const raw = Buffer.from(await exchange(lane.port, [get('/fast/bytes', 'connection: close\r\n')]), 'latin1')
    assert.deepEqual(raw.subarray(raw.length - BYTES_BODY.length), BYTES_BODY)
  })

  test('pipelined requests are answered in order, across a hand-over to node:http', async () => {
    const raw = await exchange(lane.port, [
      get('/fast/1') + get('/fast/2') + get('/fast/declined') + get('/fast/3') + get('/nothing') + LAST,
    ])
    assert.deepEqual(statuses(raw), [200, 200, 200, 200, 404, 200])
    // The lane answered the first two; node:http (with the same fast path behind it) the rest.
    assert.equal(
      withoutDate(raw),
      withoutDate(
        await exchange(plain.port, [
          get('/fast/1') + get('/fast/2') + get('/fast/declined') + get('/fast/3') + get('/nothing') + LAST,
        ]),
      ),
    )
    assert.deepEqual(
      [...raw.matchAll(/\r\n\r\n(lane|route)/g)].map((m) => m[1]),
      ['lane', 'lane', 'route', 'lane', 'lane'],
    )
    // Held for a warming that does not help, the declined request and those after it get the same.
    const held = await exchange(laneWarm.port, [
      get('/fast/1') + get('/fast/2') + get('/fast/declined') + get('/fast/3') + get('/nothing') + LAST,
    ])
    assert.equal(withoutDate(held), withoutDate(raw))
  })

  // Every request outside the lane's subset, alone and behind an answered request: the lane
  // answers the leading requests of its subset (the model: parseLaneRequest and the fast path),
  // and what follows gets exactly, byte for byte (but the date and generated request ids), what
  // the same server without the lane gives those remaining bytes on a new connection. A request
  // hidden in a body (smuggling) would show up as an extra or a missing answer.
  const sameAsWithoutLane = async (payload: Buffer, ms?: number, port = lane.port) => {
    const s = payload.toString('latin1')
    let at = 0
    let answered = 0
    let closed = false
    while (!closed) {
      const parsed = parseLaneRequest(s, at)
      if (parsed === undefined || fastPath(parsed.req) === undefined) break
      answered++
      at = parsed.next
      closed = parsed.req.headers.connection?.toLowerCase() === 'close'
    }
    const actual = withoutDate(await exchange(port, [payload], { ms }))
    const rest =
      closed || at === s.length ? '' : withoutDate(await exchange(plain.port, [payload.subarray(at)], { ms }))
    const answers = actual.split(/(?=HTTP\/1\.1 \d{3} )/)
    return {
      actual: { lane: statuses(answers.slice(0, answered).join('')), rest: untilClose(answers.slice(answered)) },
      expected: { lane: Array(answered).fill(200), rest: untilClose(rest.split(/(?=HTTP\/1\.1 \d{3} )/)) },
    }
  }
  // Answers up to the first that closes the connection: a client reads nothing after it, and
  // node:http may or may not still write one more by timing alone, with or without the lane.
  // Seen once in CI under load: a request without Host, then bytes that do not parse; node:http
  // answered the first 400 with Connection: close, and Fastify's 400 for the bytes came after
  // it on one connection only (the lane had handed both over at their first byte).
  function untilClose(answers: string[]): string {
    const i = answers.findIndex((a) => /\r\nconnection: close\r\n/i.test(a.slice(0, a.indexOf('\r\n\r\n') + 2)))
    return (i === -1 ? answers : answers.slice(0, i + 1)).join('')
  }
  const smuggle = get('/fast/smuggled')
  const cases: [string, string][] = [
    ['POST with a body', `POST /fast/p HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\n\r\nhello`],
    [
      'GET with a body holding a request',
      `GET /fast/a HTTP/1.1\r\nhost: x\r\ncontent-length: ${smuggle.length}\r\n\r\n${smuggle}`,
    ],
    [
      'CL.TE',
      `GET /fast/a HTTP/1.1\r\nhost: x\r\ncontent-length: ${5 + smuggle.length}\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n${smuggle}`,
    ],
    [
      'chunked GET holding a request',
      `GET /fast/a HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n${smuggle.length.toString(16)}\r\n${smuggle}\r\n0\r\n\r\n`,
    ],
    ['obs-fold', `GET /fast/a HTTP/1.1\r\nhost: x\r\nx-a: 1\r\n content-length: 5\r\n\r\nhello`],
    ['bare LF lines', `GET /fast/a HTTP/1.1\nhost: x\n\n`],
    ['bare CR inside a header', `GET /fast/a HTTP/1.1\r\nhost: x\rcontent-length: 3\r\n\r\nabc`],
    ['space before the colon', `GET /fast/a HTTP/1.1\r\nhost: x\r\ncontent-length : 5\r\n\r\nhello`],
    ['two Host headers', `GET /fast/a HTTP/1.1\r\nhost: x\r\nhost: y\r\n\r\n`],
    ['no Host header', `GET /fast/a HTTP/1.1\r\n\r\n`],
    // Found by the property below (CI, once): node:http closes, and may still answer the rest.
    [
      'no Host, a body, then bytes that do not parse',
      `GET /fast/c HTTP/1.1\r\ncontent-length: 3\r\n\r\n${get('/fast/a')}`,
    ],
    ['HTTP/1.0', `GET /fast/a HTTP/1.0\r\nhost: x\r\n\r\n`],
    ['absolute-form target', `GET http://x/fast/a HTTP/1.1\r\nhost: x\r\n\r\n`],
    ['NUL in the target', `GET /fast/a\0b HTTP/1.1\r\nhost: x\r\n\r\n`],
    ['lower-case method', `get /fast/a HTTP/1.1\r\nhost: x\r\n\r\n`],
    ['Upgrade', get('/fast/a', 'connection: upgrade\r\nupgrade: websocket\r\n')],
    ['Expect', get('/fast/a', 'expect: 100-continue\r\n')],
    ['a Connection list', get('/fast/a', 'connection: keep-alive, te\r\nte: trailers\r\n')],
    ['a header over 16 KiB', get('/fast/a', `x-big: ${'a'.repeat(17 * 1024)}\r\n`)],
    ['65 header lines', get('/fast/a', Array.from({ length: 65 }, (_, i) => `x-h${i}: ${i}\r\n`).join(''))],
    ['a byte above 0x7e in a value', get('/fast/a', 'x-a: caf\xe9\r\n')],
    ['a control byte in a value', get('/fast/a', 'x-a: a\x01b\r\n')],
  ]
  for (const [name, bad] of cases) {
    test(`outside the subset, node:http decides: ${name}`, async () => {
      for (const bytes of [bad + LAST, get('/fast/first') + bad + LAST]) {
        const { expected, actual } = await sameAsWithoutLane(Buffer.from(bytes, 'latin1'), 1000)
        assert.deepEqual(actual, expected, name)
        assert.ok(statuses(actual.rest).length >= 1, 'node:http answered the rest')
      }
    })
  }

  test('a request split across reads is left to node:http, which waits for the rest', async () => {
    const req = get('/fast/a', 'x-a: 1\r\n')
    const raw = await exchange(lane.port, [req.slice(0, 5), req.slice(5, 20), req.slice(20) + LAST])
    assert.deepEqual(statuses(raw), [200, 200])
  })

  test('property: any bytes get the answers a server without the lane gives', async () => {
    // Only requests the fast path answers (synchronously, also behind node:http): an answer
    // Fastify gives later can be lost when node:http meets a malformed request after it in the
    // same read, with or without the lane, which is node:http's behaviour, not a boundary.
    const pieces = [
      get('/fast/a'),
      get('/fast/b', 'x-a: 1\r\n'),
      `HEAD /fast/h HTTP/1.1\r\nhost: x\r\n\r\n`,
      'transfer-encoding: chunked\r\n',
      'content-length: 3\r\n',
      '0\r\n\r\n',
      '\r\n',
      '\n',
      ' ',
      'GET /fast/c HTTP/1.1\r\n',
      'host: x\r\n',
      'abc',
    ]
    await fc.assert(
      fc.asyncProperty(fc.array(fc.constantFrom(...pieces), { minLength: 1, maxLength: 6 }), async (parts) => {
        const payload = Buffer.from(parts.join('') + LAST, 'latin1')
        for (const port of [lane.port, laneWarm.port]) {
          const { expected, actual } = await sameAsWithoutLane(payload, 1500, port)
          assert.deepEqual(actual, expected, JSON.stringify(parts))
        }
      }),
      { numRuns: 40 },
    )
  })

  test('parseLaneRequest takes only whole heads of the subset', () => {
    const ok = parseLaneRequest(`x${get('/a?b=c', 'if-none-match: "e"\r\nX-Request-Id:  id-1 \r\n')}`, 1)
    assert.deepEqual(
      { ...ok?.req, headers: { ...ok?.req.headers } },
      { method: 'GET', url: '/a?b=c', headers: { host: 'x', 'if-none-match': '"e"', 'x-request-id': 'id-1' } },
    )
    assert.equal(parseLaneRequest(get('/a').slice(0, -1), 0), undefined)
    assert.equal(parseLaneRequest(get('/a', 'Content-Length: 0\r\n'), 0), undefined)
  })

  test('parseLaneRequest reads common and uncommon header names alike, in any case, once each', () => {
    const ok = parseLaneRequest(get('/a', 'User-Agent: ua\r\nX-Own-Header: 1\r\nACCEPT: */*\r\n'), 0)
    assert.deepEqual({ ...ok?.req.headers }, { host: 'x', 'user-agent': 'ua', 'x-own-header': '1', accept: '*/*' })
    // A repeated name, common (its constant) or not (a fresh string), sends the request away.
    assert.equal(parseLaneRequest(get('/a', 'Accept: a\r\naccept: b\r\n'), 0), undefined)
    assert.equal(parseLaneRequest(get('/a', 'X-Own: a\r\nx-own: b\r\n'), 0), undefined)
    assert.equal(parseLaneRequest(get('/a', 'HOST: y\r\n'), 0), undefined)
  })

  test('a client that resets the connection mid-answer does not disturb the server', async () => {
    for (let i = 0; i < 20; i++) {
      const socket = netConnect({ port: lane.port, host: '127.0.0.1' })
      await once(socket, 'connect')
      socket.write(get('/fast/big').repeat(50))
      await new Promise((r) => setTimeout(r, 1))
      socket.resetAndDestroy()
    }
    assert.deepEqual(statuses(await exchange(lane.port, [LAST])), [200])
  })

  test('a client that does not read its answers gets every one, in order, once it reads', async () => {
    const socket = netConnect({ port: lane.port, host: '127.0.0.1' })
    await once(socket, 'connect')
    socket.pause()
    const n = 200
    socket.write(get('/fast/big').repeat(n) + LAST)
    await new Promise((r) => setTimeout(r, 300))
    let bytes = 0
    socket.on('data', (d: Buffer) => {
      bytes += d.length
    })
    socket.resume()
    await once(socket, 'close')
    const one = (await exchange(lane.port, [get('/fast/big', 'connection: close\r\n')])).length
    const last = (await exchange(lane.port, [LAST])).length
    // Keep-alive answers are a few bytes longer than the close one.
    assert.ok(bytes >= n * one + last, `${bytes} < ${n * one + last}`)
  })
})

describe('the HTTP lane holds connections like node:http', () => {
  test('an idle keep-alive connection is closed after keepAliveTimeout', async () => {
    const { app, port } = await startApp(true)
    try {
      app.server.keepAliveTimeout = 300
      const raw = await exchange(port, [get('/fast/a')], { ms: 10_000 })
      assert.deepEqual(statuses(raw), [200])
      assert.match(raw, /Keep-Alive: timeout=0\r\n/)
    } finally {
      await app.close()
    }
  })

  test('with keepAliveTimeout 0 the answer has no Keep-Alive line, as from node:http, and no idle timeout', async () => {
    const { app, port } = await startApp(true)
    try {
      app.server.keepAliveTimeout = 0
      const req = get('/fast/a', 'x-request-id: same-id\r\n')
      const viaLane = await exchange(port, [req], { ms: 1000 })
      const viaNode = await exchange(port, [req.slice(0, 10), req.slice(10)], { ms: 1000 })
      assert.equal(withoutDate(viaLane), withoutDate(viaNode))
      assert.doesNotMatch(viaLane, /Keep-Alive/)
      assert.match(viaLane, /Connection: keep-alive\r\n/)
    } finally {
      await app.close()
    }
  })

  test('close() ends the connections the lane holds instead of waiting for them', async () => {
    const { app, port } = await startApp(true)
    const socket = netConnect({ port, host: '127.0.0.1' })
    await once(socket, 'connect')
    socket.write(get('/fast/a'))
    await once(socket, 'data')
    const closed = once(socket, 'close')
    // Without the lane's part in closeIdleConnections this waits for the 72 s keep-alive timeout.
    await Promise.race([
      app.close(),
      new Promise((_, reject) => setTimeout(() => reject(new Error('close() waited for the lane')), 20_000)),
    ])
    await closed
  })

  test('over TLS the lane answers, and hands over to node:http as over TCP', async () => {
    const ca = createTestCa()
    const cert = ca.issueServer()
    const { app, port } = await startApp(true, { key: cert.key, cert: cert.cert })
    try {
      const raw = await exchange(port, [get('/fast/1') + get('/fast/declined') + get('/nothing') + LAST], {
        tls: ca.ca,
      })
      assert.deepEqual(statuses(raw), [200, 200, 404, 200])
      assert.deepEqual(
        [...raw.matchAll(/\r\n\r\n(lane|route)/g)].map((m) => m[1]),
        ['lane', 'route', 'lane'],
      )
    } finally {
      await app.close()
    }
  })
})

describe('the HTTP lane waits for a fast path to warm', () => {
  const warmed = new Set<string>()
  const gates = new Map<string, () => void>()
  let warmCalls = 0
  /** Opens `gate-<n>` for `warm`; the gate must be asked for first. */
  const openGate = (name: string) => gates.get(name)!()
  const gateAsked = async (name: string) => {
    for (let i = 0; i < 500 && !gates.has(name); i++) await new Promise((r) => setTimeout(r, 10))
    assert.ok(gates.has(name), `warm was not asked for ${name}`)
  }

  /** `/warm/<name>` is answered once `<name>` is warmed: `lane` in the lane, `http` behind node:http. */
  async function startWarmApp(): Promise<App> {
    const stream = new PassThrough()
    let text = ''
    stream.on('data', (c: Buffer) => {
      text += c.toString('utf8')
    })
    const app = await createHttpApp({ name: 'warmapp', logger: createLogger({ name: 'warmapp', destination: stream }) })
    app.get('/warm/*', async (_req, reply) => reply.type('text/plain').send('route'))
    const name = (req: FastRequest) => (req.url ?? '').slice('/warm/'.length)
    app.setFastPath(
      (req) => {
        if (!req.url?.startsWith('/warm/') || !warmed.has(name(req))) return undefined
        return {
          status: 200,
          headers: TEXT,
          body: req instanceof IncomingMessage ? 'http' : 'lane',
          route: '/warm/:name',
        }
      },
      {
        warm(req) {
          if (!req.url?.startsWith('/warm/')) return undefined
          warmCalls++
          const n = name(req)
          if (n === 'none') return undefined
          if (n === 'never') return Promise.resolve()
          if (n === 'fail') return Promise.reject(new Error('storage unavailable'))
          if (n === 'throw') throw new Error('warm threw')
          if (n.startsWith('gate-')) {
            return new Promise<void>((resolve) => gates.set(n, resolve)).then(() => {
              warmed.add(n)
            })
          }
          return new Promise((r) => setTimeout(r, 20)).then(() => warmed.add(n))
        },
      },
    )
    await app.listen({ port: 0, host: '127.0.0.1' })
    return { app, port: (app.server.address() as { port: number }).port, logs: () => text }
  }

  const bodies = (raw: string) => [...raw.matchAll(/\r\n\r\n(lane|http|route)/g)].map((m) => m[1])
  /** The lane's counters: held requests, connections handed to node:http. */
  const laneCounts = async (app: HttpApp) => {
    const value = async (name: string) =>
      (await app.metrics.registry.getSingleMetric(`warmapp_${name}`)!.get()).values[0]?.value ?? 0
    return { held: await value('http_lane_held_total'), handedOver: await value('http_lane_handovers_total') }
  }
  const getClose = (path: string) => get(path, 'connection: close\r\n')

  let w: App
  before(async () => {
    w = await startWarmApp()
  })
  after(async () => {
    await w.app.close()
  })

  test('a declined request is held while its cache warms, then answered in the lane with those after it', async () => {
    const calls = warmCalls
    const counts = await laneCounts(w.app)
    // In one read: a cold request, the same again, another cold one; then, in a later read, a warm one.
    const raw = await exchange(w.port, [get('/warm/a') + get('/warm/a') + get('/warm/b'), getClose('/warm/a')])
    assert.deepEqual(statuses(raw), [200, 200, 200, 200])
    assert.deepEqual(bodies(raw), ['lane', 'lane', 'lane', 'lane'])
    assert.equal(warmCalls - calls, 2)
    const now = await laneCounts(w.app)
    assert.deepEqual(
      { held: now.held - counts.held, handedOver: now.handedOver - counts.handedOver },
      { held: 2, handedOver: 0 },
    )
    // The held requests are counted like any other (the kit's metrics and access line).
    assert.equal(w.logs().match(/"route":"\/warm\/:name"/g)?.length, 4)
  })

  test('when warming cannot help, the request and its connection go to node:http', async () => {
    assert.deepEqual(bodies(await exchange(w.port, [getClose('/warm/c')])), ['lane'])
    for (const [outcome, held] of [
      ['never', 1],
      ['fail', 1],
      ['none', 0],
      ['throw', 0],
    ] as const) {
      const counts = await laneCounts(w.app)
      // The full path answers the request; the connection stays with node:http (where the fast path still answers).
      const raw = await exchange(w.port, [get(`/warm/${outcome}`) + get('/warm/c') + getClose('/warm/c')])
      assert.deepEqual(statuses(raw), [200, 200, 200], outcome)
      assert.deepEqual(bodies(raw), ['route', 'http', 'http'], outcome)
      const now = await laneCounts(w.app)
      assert.deepEqual(
        { held: now.held - counts.held, handedOver: now.handedOver - counts.handedOver },
        { held, handedOver: 1 },
        outcome,
      )
    }
    const failed = w
      .logs()
      .split('\n')
      .filter((l) => l.includes('fast path failed; the full path answers'))
    assert.equal(failed.length, 1)
    assert.equal(JSON.parse(failed[0]!).err.message, 'warm threw')
  })

  test('a held request is not idle: the keep-alive timeout and close() wait for it, then Fastify answers 503', async () => {
    const { app, port } = await startWarmApp()
    app.server.keepAliveTimeout = 100
    const socket = netConnect({ port, host: '127.0.0.1' })
    await once(socket, 'connect')
    const got: Buffer[] = []
    socket.on('data', (d: Buffer) => got.push(d))
    const closed = once(socket, 'close')
    socket.write(get('/warm/gate-1'))
    await gateAsked('gate-1')
    await new Promise((r) => setTimeout(r, 400))
    assert.equal(socket.destroyed, false, 'the keep-alive timeout ended a held request')
    const closing = app.close()
    await new Promise((r) => setTimeout(r, 200))
    assert.equal(socket.destroyed, false, 'close() ended a held request')
    openGate('gate-1')
    await closed
    await closing
    const raw = Buffer.concat(got).toString('latin1')
    assert.deepEqual(statuses(raw), [503])
  })

  test('a client that goes away while held disturbs nothing', async () => {
    const socket = netConnect({ port: w.port, host: '127.0.0.1' })
    await once(socket, 'connect')
    socket.write(get('/warm/gate-2'))
    await gateAsked('gate-2')
    socket.destroy()
    await new Promise((r) => setTimeout(r, 50))
    openGate('gate-2')
    assert.deepEqual(bodies(await exchange(w.port, [getClose('/warm/gate-2')])), ['lane'])
  })
})
