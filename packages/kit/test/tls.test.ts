import assert from 'node:assert/strict'
import { once } from 'node:events'
import { writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:https'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import type { TLSSocket } from 'node:tls'
import { createTestCa, type TestCa } from '@gatehouse/testkit'
import {
  createHttpApp,
  createLogger,
  createTlsAgent,
  HttpClientError,
  httpsServerOptions,
  loadTlsMaterial,
  requestNoRedirect,
  StartupError,
} from '../src/index.ts'

let ca: TestCa
let server: Server
let base: string
const hits: string[] = []

before(async () => {
  ca = createTestCa()
  const issued = ca.issueServer(['localhost', '127.0.0.1'])
  const material = loadTlsMaterial({ cert: issued.certPath, key: issued.keyPath, ca: ca.caPath })
  server = createServer(
    httpsServerOptions({ ...material, requestClientCert: true, requireClientCert: true }),
    (req, res) => {
      hits.push(req.url ?? '')
      const peer = (req.socket as TLSSocket).getPeerCertificate()
      switch (req.url) {
        case '/whoami':
          res.setHeader('content-type', 'application/json')
          res.end(JSON.stringify({ cn: peer.subject?.CN, authorized: (req.socket as TLSSocket).authorized }))
          return
        case '/redirect':
          res.writeHead(302, { location: '/secret-target' })
          res.end('moved')
          return
        case '/big':
          res.end(Buffer.alloc(64 * 1024, 'x'))
          return
        case '/missing':
          res.writeHead(404)
          res.end('{"error":{"code":"not_found"}}')
          return
        default:
          res.end('ok')
      }
    },
  )
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  base = `https://127.0.0.1:${(server.address() as AddressInfo).port}`
})

after(async () => {
  server.closeAllConnections()
  server.close()
  ca.remove()
})

function clientAgent(withCert = true) {
  const client = ca.issueClient('gate-1')
  const tls = loadTlsMaterial({
    ca: ca.caPath,
    ...(withCert ? { cert: client.certPath, key: client.keyPath } : {}),
  })
  const agent = createTlsAgent(tls)
  after(() => agent.close())
  return agent
}

describe('mTLS with requestNoRedirect', () => {
  test('succeeds with a client certificate issued by the CA', async () => {
    const res = await requestNoRedirect(`${base}/whoami`, { dispatcher: clientAgent() })
    assert.equal(res.status, 200)
    assert.deepEqual(res.json(), { cn: 'gate-1', authorized: true })
  })

  test('the handshake fails without a client certificate', async () => {
    await assert.rejects(requestNoRedirect(`${base}/whoami`, { dispatcher: clientAgent(false) }), (err: unknown) => {
      assert.ok(err instanceof HttpClientError)
      assert.equal(err.code, 'network')
      assert.match(err.message, new RegExp(`^${base.replaceAll('.', '\\.')}: `))
      return true
    })
  })

  test('a server certificate from another CA is refused', async () => {
    const other = createTestCa('Other CA')
    after(() => other.remove())
    const client = ca.issueClient('gate-2')
    const agent = createTlsAgent({ ca: other.ca, cert: client.cert, key: client.key })
    after(() => agent.close())
    await assert.rejects(requestNoRedirect(`${base}/whoami`, { dispatcher: agent }), (err: unknown) => {
      assert.ok(err instanceof HttpClientError)
      assert.equal(err.code, 'network')
      return true
    })
  })

  test('a redirect is refused and its Location never requested', async () => {
    hits.length = 0
    await assert.rejects(requestNoRedirect(`${base}/redirect`, { dispatcher: clientAgent() }), (err: unknown) => {
      assert.ok(err instanceof HttpClientError)
      assert.equal(err.code, 'redirect_refused')
      assert.equal(err.statusCode, 302)
      return true
    })
    assert.deepEqual(hits, ['/redirect'])
  })

  test('a body over maxBytes is too_large', async () => {
    await assert.rejects(
      requestNoRedirect(`${base}/big`, { dispatcher: clientAgent(), maxBytes: 1000 }),
      (err: unknown) => {
        assert.ok(err instanceof HttpClientError)
        assert.equal(err.code, 'too_large')
        assert.equal(err.message, 'response body exceeds 1000 bytes')
        return true
      },
    )
    const ok = await requestNoRedirect(`${base}/big`, { dispatcher: clientAgent(), maxBytes: 64 * 1024 })
    assert.equal(ok.body.length, 64 * 1024)
  })

  test('a status outside accept is bad_status', async () => {
    const agent = clientAgent()
    await assert.rejects(requestNoRedirect(`${base}/missing`, { dispatcher: agent }), (err: unknown) => {
      assert.ok(err instanceof HttpClientError)
      assert.equal(err.code, 'bad_status')
      assert.equal(err.statusCode, 404)
      return true
    })
    const res = await requestNoRedirect(`${base}/missing`, { dispatcher: agent, accept: (s) => s === 404 })
    assert.equal(res.status, 404)
    assert.deepEqual(res.json(), { error: { code: 'not_found' } })
  })
})

describe('createHttpApp over HTTPS with client certificates', () => {
  test('serves the app through httpsServerOptions', async () => {
    const issued = ca.issueServer()
    const logger = createLogger({ name: 'tlsapp', level: 'silent' })
    const app = await createHttpApp({
      name: 'tlsapp',
      logger,
      https: httpsServerOptions({
        ...loadTlsMaterial({ cert: issued.certPath, key: issued.keyPath, ca: ca.caPath }),
        requestClientCert: true,
      }),
    })
    app.get('/peer', async (req) => ({ authorized: (req.raw.socket as TLSSocket).authorized }))
    const address = await app.listen({ port: 0, host: '127.0.0.1' })
    after(() => app.close())
    assert.match(address, /^https:/)
    const withCert = await requestNoRedirect(`${address}/peer`, { dispatcher: clientAgent() })
    assert.deepEqual(withCert.json(), { authorized: true })
    // Requested but not required: the peer connects and the app sees it is not authorised.
    const without = await requestNoRedirect(`${address}/peer`, { dispatcher: clientAgent(false) })
    assert.deepEqual(without.json(), { authorized: false })
  })
})

describe('loadTlsMaterial', () => {
  function startupError(fn: () => unknown): StartupError {
    try {
      fn()
    } catch (err) {
      assert.ok(err instanceof StartupError, `expected StartupError, got ${String(err)}`)
      assert.equal(err.lines.length, 1)
      assert.doesNotMatch(err.lines[0]!, /\n/)
      return err
    }
    assert.fail('expected a StartupError')
  }

  test('a missing file is one clear line', () => {
    const missing = join(ca.dir, 'nope.crt')
    const err = startupError(() => loadTlsMaterial({ cert: missing, key: missing }))
    assert.equal(err.lines[0], `TLS certificate ${missing} cannot be read (ENOENT)`)
  })

  test('a file that is not PEM is one clear line', () => {
    const notPem = join(ca.dir, 'not-pem.crt')
    writeFileSync(notPem, 'hello\n')
    const err = startupError(() => loadTlsMaterial({ ca: notPem }))
    assert.equal(err.lines[0], `TLS CA bundle ${notPem} is not a PEM file`)
  })

  test('a certificate needs its key', () => {
    const err = startupError(() => loadTlsMaterial({ cert: ca.caPath }))
    assert.match(err.lines[0]!, /certificate and its key must be given together/)
  })

  test('misuse of httpsServerOptions is a TypeError', () => {
    assert.throws(() => httpsServerOptions({}), TypeError)
    const material = loadTlsMaterial({ cert: ca.caPath, key: ca.caPath })
    assert.throws(() => httpsServerOptions({ ...material, requestClientCert: true }), TypeError)
    const opts = httpsServerOptions({ ...material })
    assert.equal(opts.requestCert, false)
    assert.equal(opts.rejectUnauthorized, false)
    assert.equal(opts.minVersion, 'TLSv1.2')
  })
})
