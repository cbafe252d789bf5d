import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { Agent } from 'undici'
import { HttpClientError, requestNoRedirect } from '../src/index.ts'

// Plain-HTTP cases; the mTLS cases live in tls.test.ts.
let server: Server
let base: string
const hits: Array<{ method: string; url: string; body: string }> = []
let hold: Array<() => void> = []

before(async () => {
  server = createServer((req, res) => {
    let body = ''
    req.on('data', (c: Buffer) => {
      body += c.toString()
    })
    req.on('end', () => {
      hits.push({ method: req.method ?? '', url: req.url ?? '', body })
      if (req.url === '/echo') {
        res.setHeader('content-type', 'application/json')
        res.end(JSON.stringify({ method: req.method, body, auth: req.headers.authorization ?? null }))
      } else if (req.url === '/moved') {
        res.writeHead(301, { location: '/target' })
        res.end()
      } else if (req.url === '/conditional') {
        res.writeHead(304, { etag: '"v1"' })
        res.end()
      } else if (req.url === '/stream') {
        // Sends more than the limit in many chunks, then never ends: the client must stop reading.
        res.writeHead(200)
        for (let i = 0; i < 100; i++) res.write(Buffer.alloc(1024, 'y'))
        hold.push(() => res.end())
      } else if (req.url === '/hang') {
        hold.push(() => res.end('late'))
      } else res.end('ok')
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

after(() => {
  for (const release of hold) release()
  hold = []
  server.closeAllConnections()
  server.close()
})

describe('requestNoRedirect', () => {
  test('sends method, headers and body and reads JSON', async () => {
    const res = await requestNoRedirect(`${base}/echo`, {
      method: 'POST',
      headers: { authorization: 'Bearer t', 'content-type': 'application/json' },
      body: '{"a":1}',
    })
    assert.equal(res.status, 200)
    assert.deepEqual(res.json(), { method: 'POST', body: '{"a":1}', auth: 'Bearer t' })
    assert.equal(res.headers['content-type'], 'application/json')
  })

  test('a 301 is redirect_refused and the target is not requested', async () => {
    hits.length = 0
    await assert.rejects(requestNoRedirect(new URL(`${base}/moved`)), (err: unknown) => {
      assert.ok(err instanceof HttpClientError)
      assert.equal(err.code, 'redirect_refused')
      assert.equal(err.statusCode, 301)
      assert.match(err.message, /redirects are not followed/)
      return true
    })
    assert.deepEqual(
      hits.map((h) => h.url),
      ['/moved'],
    )
  })

  test('a 304 answers a conditional request: not a redirect, a bad_status unless accepted', async () => {
    const res = await requestNoRedirect(`${base}/conditional`, {
      headers: { 'if-none-match': '"v1"' },
      accept: (s) => s === 200 || s === 304,
    })
    assert.equal(res.status, 304)
    assert.equal(res.body.length, 0)
    await assert.rejects(requestNoRedirect(`${base}/conditional`), (err: unknown) => {
      assert.ok(err instanceof HttpClientError)
      assert.equal(err.code, 'bad_status')
      return true
    })
  })

  test('stops reading a body that exceeds maxBytes', async () => {
    await assert.rejects(requestNoRedirect(`${base}/stream`, { maxBytes: 10 * 1024 }), (err: unknown) => {
      assert.ok(err instanceof HttpClientError)
      assert.equal(err.code, 'too_large')
      return true
    })
  })

  test('a deadline turns a hanging server into a network error', async () => {
    await assert.rejects(requestNoRedirect(`${base}/hang`, { timeoutMs: 100 }), (err: unknown) => {
      assert.ok(err instanceof HttpClientError)
      assert.equal(err.code, 'network')
      assert.equal(err.timedOut, true)
      return true
    })
    // The dispatcher's headers timeout firing first (the same length, under load) is a deadline too.
    const agent = new Agent({ headersTimeout: 100 })
    try {
      await assert.rejects(
        requestNoRedirect(`${base}/hang`, { timeoutMs: 5000, dispatcher: agent }),
        (err: unknown) => {
          assert.ok(err instanceof HttpClientError)
          assert.equal(err.code, 'network')
          assert.match(err.message, /Headers Timeout/)
          assert.equal(err.timedOut, true)
          return true
        },
      )
    } finally {
      await agent.close()
    }
  })

  test('a closed port is a network error naming the origin only', async () => {
    const closed = createServer()
    closed.listen(0, '127.0.0.1')
    await once(closed, 'listening')
    const port = (closed.address() as AddressInfo).port
    closed.close()
    await once(closed, 'close')
    await assert.rejects(requestNoRedirect(`http://127.0.0.1:${port}/path?token=SECRET`), (err: unknown) => {
      assert.ok(err instanceof HttpClientError)
      assert.equal(err.code, 'network')
      assert.match(err.message, new RegExp(`^http://127\\.0\\.0\\.1:${port}: `))
      assert.doesNotMatch(err.message, /SECRET/)
      return true
    })
  })
})
