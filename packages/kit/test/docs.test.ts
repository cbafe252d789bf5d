import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { Type } from 'typebox'
import { createHttpApp, createLogger, type HttpApp, packageVersion, validationMessage } from '../src/index.ts'

const Alert = Type.Object(
  {
    title: Type.String({ minLength: 1, maxLength: 20 }),
    severity: Type.Union([Type.Literal('info'), Type.Literal('warning'), Type.Literal('critical')]),
    count: Type.Optional(Type.Integer({ minimum: 1 })),
  },
  { additionalProperties: false },
)

describe('discoverable APIs', () => {
  let app: HttpApp
  let base: string
  before(async () => {
    app = await createHttpApp({
      openapi: {
        errors: { alert_muted: { status: 409 }, alert_not_found: { status: 404 } },
        securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
        security: ({ method, url }) =>
          url === '/v1/status' ? [] : method === 'POST' && url.startsWith('/v1/') ? [{ bearer: [] }] : undefined,
      },
      name: 'docsapp',
      version: '1.2.3',
      logger: createLogger({ name: 'docsapp', level: 'silent' }),
    })
    app.post('/v1/alerts', { schema: { summary: 'Raise an alert', body: Alert } }, async (req) => req.body)
    app.get('/v1/status', { schema: { summary: 'Public status' } }, async () => ({ ok: true }))
    app.get('/v1/alerts', { schema: { summary: 'List alerts', security: [{ bearer: ['read'] }] } }, async () => [])
    base = await app.listen({ port: 0, host: '127.0.0.1' })
  })
  after(() => app.close())

  const post = async (body: unknown) => {
    const res = await fetch(`${base}/v1/alerts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
    return {
      status: res.status,
      body: (await res.json()) as { error: { code: string; message: string; path: string } },
    }
  }

  test('a union of literals says which values are allowed', async () => {
    const res = await post({ title: 'disk', severity: 'loud' })
    assert.equal(res.status, 400)
    assert.deepEqual(res.body.error, {
      code: 'invalid_request',
      message: 'body.severity must be one of info, warning, critical',
      path: 'body.severity',
    })
  })

  test('missing fields, types and bounds are named in plain words', async () => {
    assert.equal((await post({ severity: 'info' })).body.error.message, 'body.title is required')
    assert.equal((await post({ title: 5, severity: 'info' })).body.error.message, 'body.title must be a string')
    assert.equal(
      (await post({ title: 'x'.repeat(21), severity: 'info' })).body.error.message,
      'body.title must be at most 20 characters long',
    )
    assert.equal(
      (await post({ title: 'a', severity: 'info', count: 0 })).body.error.message,
      'body.count must be at least 1',
    )
    assert.equal(
      (await post({ title: 'a', severity: 'info', admin: true })).body.error.message,
      'body has unknown field "admin"',
    )
  })

  test('/docs serves Swagger UI over the document, without inline scripts', async () => {
    const res = await fetch(`${base}/docs/`, { redirect: 'follow' })
    assert.equal(res.status, 200)
    const html = await res.text()
    assert.match(html, /swagger-ui-bundle\.js/)
    assert.doesNotMatch(html, /<script>(?!\s*<\/script>)|<script(?![^>]*\ssrc=)[^>]*>/)
    const src = /<script src="([^"]*swagger-initializer\.js)"/.exec(html)?.[1]
    assert.ok(src, html)
    const init = await fetch(new URL(src, `${base}/docs/`))
    assert.equal(init.status, 200)
    assert.match(await init.text(), /json/)
    const doc = (await (await fetch(`${base}/openapi.json`)).json()) as {
      info: { version: string }
      paths: Record<string, Record<string, { summary?: string }>>
    }
    assert.equal(doc.info.version, '1.2.3')
    assert.equal(doc.paths['/v1/alerts']?.post?.summary, 'Raise an alert')
    assert.equal(doc.paths['/docs'], undefined, 'the docs pages are not API routes')
    const full = doc as unknown as {
      paths: Record<string, Record<string, { responses: Record<string, { description: string }> }>>
      components: { securitySchemes: Record<string, unknown>; schemas: Record<string, unknown> }
    }
    const responses = full.paths['/v1/alerts']!.post!.responses
    assert.match(responses['409']!.description, /alert_muted/)
    assert.match(responses['404']!.description, /alert_not_found/)
    assert.match(responses['400']!.description, /invalid_request/)
    assert.equal(responses['500']!.description, 'error code: internal')
    assert.deepEqual(full.components.securitySchemes, { bearer: { type: 'http', scheme: 'bearer' } })
    // The app's rule attaches its schemes per route; a route's own `security` wins.
    const security = (path: string, method: string) =>
      (full.paths[path]![method] as unknown as { security?: unknown }).security
    assert.deepEqual(security('/v1/alerts', 'post'), [{ bearer: [] }])
    assert.deepEqual(security('/v1/status', 'get'), [])
    assert.deepEqual(security('/v1/alerts', 'get'), [{ bearer: ['read'] }])
  })
})

test('packageVersion reads the nearest package.json', () => {
  assert.equal(packageVersion(import.meta.dirname), '0.1.0')
  assert.throws(() => packageVersion('/'), TypeError)
})

test('validationMessage falls back to the validator sentence for keywords it does not rephrase', () => {
  assert.deepEqual(
    validationMessage('query', [
      { keyword: 'multipleOf', instancePath: '/n', message: 'must be multiple of 2', params: {} },
    ]),
    { path: 'query.n', message: 'query.n must be multiple of 2' },
  )
  assert.deepEqual(validationMessage('body', []), { path: 'body', message: 'body is invalid' })
})
