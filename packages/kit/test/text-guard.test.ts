import assert from 'node:assert/strict'
import { PassThrough } from 'node:stream'
import { after, before, describe, test } from 'node:test'
import fc from 'fast-check'
import { Type } from 'typebox'
import { request } from 'undici'
import { createHttpApp, createLogger, findNul, type HttpApp, refuseNul } from '../src/index.ts'

describe('findNul', () => {
  test('names the path of the first NUL in values and keys', () => {
    assert.equal(findNul({ a: ['x', 'y\u0000'] }, 'body'), 'body.a[1]')
    assert.equal(findNul({ 'k\u0000': 1 }, 'body'), 'body')
    assert.equal(findNul('\u0000', 'query'), 'query')
    assert.equal(findNul({ a: 1, b: null, c: [true, 'ok'] }, 'body'), undefined)
    assert.equal(findNul(Buffer.from([0, 0]), 'body'), undefined)
  })
  test('finds a NUL wherever it is, and never when there is none', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = JSON.stringify(value)
        assert.equal(findNul(value) !== undefined, text.includes('\\u0000'))
      }),
    )
  })
  test('refuseNul throws a coded 400', () => {
    assert.throws(() => refuseNul({ t: 'a\u0000' }, 'payload'), { statusCode: 400, code: 'invalid_request' })
  })
})

describe('createHttpApp refuses NUL', () => {
  let app: HttpApp
  let base: string
  let reached = 0
  before(async () => {
    const logger = createLogger({ name: 'testapp', destination: new PassThrough() })
    app = await createHttpApp({ name: 'testapp', logger })
    const Body = Type.Object({ title: Type.String() }, { additionalProperties: false })
    app.post('/v1/items/:id', { schema: { body: Body } }, async () => {
      reached++
      return { ok: true }
    })
    app.post('/v1/loose', async () => {
      reached++
      return { ok: true }
    })
    base = await app.listen({ port: 0, host: '127.0.0.1' })
  })
  after(() => app.close())

  const cases: Array<[string, string, string, string]> = [
    ['body', '/v1/items/1', JSON.stringify({ title: 'a\u0000b' }), 'body.title'],
    ['body without schema', '/v1/loose', JSON.stringify({ deep: [{ x: '\u0000' }] }), 'body.deep[0].x'],
    ['query', '/v1/items/1?q=%00', JSON.stringify({ title: 'ok' }), 'query.q'],
    ['path parameter', '/v1/items/a%00b', JSON.stringify({ title: 'ok' }), 'params.id'],
  ]
  for (const [name, path, body, where] of cases) {
    test(`a NUL in the ${name} is a 400 naming ${where}`, async () => {
      const before = reached
      const res = await request(`${base}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      })
      const json = (await res.body.json()) as { error: { code: string; message: string; path: string } }
      assert.equal(res.statusCode, 400)
      assert.equal(json.error.code, 'invalid_request')
      assert.equal(json.error.path, where)
      assert.match(json.error.message, /NUL/)
      assert.equal(reached, before)
    })
  }
})

describe('createHttpApp parses JSON bodies', () => {
  let app: HttpApp
  let base: string
  before(async () => {
    const logger = createLogger({ name: 'testapp', destination: new PassThrough() })
    app = await createHttpApp({ name: 'testapp', logger })
    app.post('/v1/echo', async (req) => ({ body: req.body }))
    base = await app.listen({ port: 0, host: '127.0.0.1' })
  })
  after(() => app.close())

  const post = async (body: string) => {
    const res = await request(`${base}/v1/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    })
    return { status: res.statusCode, json: (await res.body.json()) as { body?: unknown; error?: { code: string } } }
  }

  test("whatever the text, the body is what Fastify's own parser reads, and a NUL is refused", async () => {
    // The oracle: Fastify's parser, which the kit's takes over from (texts without `\u`,
    // `proto` or `constructor` go by JSON.parse alone, the rest by this one).
    const fastifyParser = app.getDefaultJsonParser('error', 'error')
    const expected = (text: string) => {
      let out: { value?: unknown; error?: unknown } = {}
      fastifyParser({} as never, text, (error, value) => {
        out = error ? { error } : { value }
      })
      return out
    }
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.jsonValue(), fc.dictionary(fc.string(), fc.jsonValue())), async (value) => {
        const text = JSON.stringify(value)
        const { status, json } = await post(text)
        const oracle = expected(text)
        if (oracle.error) {
          assert.equal(status, 400, text)
          assert.equal(json.error?.code, 'invalid_json', text)
        } else if (findNul(oracle.value) !== undefined) {
          assert.equal(status, 400, text)
          assert.equal(json.error?.code, 'invalid_request', text)
        } else {
          assert.equal(status, 200, text)
          assert.deepEqual(json.body, oracle.value)
        }
      }),
      { numRuns: 150 },
    )
  })

  test('bytes that are not UTF-8 are refused, not stored as U+FFFD; a U+FFFD sent as UTF-8 stays', async () => {
    const latin1 = Buffer.concat([Buffer.from('{"zone_text": "caf'), Buffer.from([0xe9]), Buffer.from('"}')])
    const res = await request(`${base}/v1/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: latin1,
    })
    assert.equal(res.statusCode, 400)
    assert.deepEqual(await res.body.json(), {
      error: { code: 'invalid_json', message: 'request body is not valid JSON: the body is not UTF-8' },
    })
    assert.deepEqual(await post('{"a": "\ufffd"}'), { status: 200, json: { body: { a: '\ufffd' } } })
  })

  test('prototype poisoning is refused, written plainly or escaped', async () => {
    for (const text of [
      '{"__proto__": {"admin": true}}',
      '{"a": 1, "\\u005f_proto__": {"admin": true}}',
      '{"constructor": {"prototype": {"admin": true}}}',
      '{"c\\u006fnstructor": {"prototype": {"admin": true}}}',
    ]) {
      const { status, json } = await post(text)
      assert.equal(status, 400, text)
      assert.equal(json.error?.code, 'invalid_json', text)
    }
  })

  test('a byte-order mark is skipped; empty and broken bodies get one clear error', async () => {
    assert.deepEqual(await post('\ufeff{"a": 1}'), { status: 200, json: { body: { a: 1 } } })
    for (const text of ['', '{"a": ', '{"a": "x\u0001"}']) {
      const { status, json } = await post(text)
      assert.equal(status, 400, JSON.stringify(text))
      assert.equal(json.error?.code, 'invalid_json')
    }
  })

  test('a NUL escaped in a key or deep in an array is still refused', async () => {
    for (const text of ['{"k\\u0000": 1}', '{"a": [[["\\u0000"]]]}']) {
      const { status, json } = await post(text)
      assert.equal(status, 400, text)
      assert.equal(json.error?.code, 'invalid_request', text)
    }
  })
})
