/**
 * `artsvc mcp-bridge` against an artsvc behind a TLS listener that requires client
 * certificates (testkit CA): the SDK client reaches every tool through the bridge, the
 * bridge listens on loopback only, adds and logs no credentials, forwards only /mcp and
 * OAuth metadata, and streams SSE responses as they are produced. Also the CLI entry.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { request as httpRequest } from 'node:http'
import { createServer as createHttpsServer, type Server } from 'node:https'
import { Writable } from 'node:stream'
import { after, before, test } from 'node:test'
import { createLogger } from '@gatehouse/kit'
import { createTestCa, freePort, type OidcProvider, startOidcProvider, type TestCa } from '@gatehouse/testkit'
import { type McpBridge, runMcpBridge } from '../src/bridge/mcp-bridge.ts'
import { AUDIENCE, bearer, type Harness, SCOPE, startArtsvc } from './helpers/harness.ts'
import { connectMcp } from './helpers/mcp-client.ts'

let op: OidcProvider
let h: Harness
let ca: TestCa
let proxy: Server
let proxyUrl: string
let bridge: McpBridge
const logLines: string[] = []
const sink = new Writable({
  write(chunk, _enc, done) {
    logLines.push(String(chunk))
    done()
  },
})

async function listen(server: Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return `https://127.0.0.1:${(server.address() as { port: number }).port}`
}

before(async () => {
  op = await startOidcProvider({ redirectUris: ['http://127.0.0.1:9/unused'], audience: AUDIENCE, scopes: [SCOPE] })
  h = await startArtsvc({ op })
  ca = createTestCa()
  const server = ca.issueServer(['127.0.0.1'])
  // The TLS listener in front of artsvc: no client certificate, no connection.
  proxy = createHttpsServer(
    { cert: server.cert, key: server.key, ca: ca.ca, requestCert: true, rejectUnauthorized: true },
    (req, res) => {
      const upstream = httpRequest(
        {
          host: '127.0.0.1',
          port: h.port,
          method: req.method,
          path: req.url,
          headers: { ...req.headers, host: `127.0.0.1:${h.port}` },
        },
        (r) => {
          res.writeHead(r.statusCode ?? 502, r.headers)
          r.pipe(res)
        },
      )
      req.pipe(upstream)
    },
  )
  proxyUrl = await listen(proxy)
  const client = ca.issueClient('mcp-bridge')
  bridge = await runMcpBridge({
    listen: '127.0.0.1:0',
    target: proxyUrl,
    tls: { cert: client.cert, key: client.key, ca: ca.ca },
    log: createLogger({ name: 'bridge', level: 'debug', destination: sink }),
  })
})
after(async () => {
  await bridge?.close()
  proxy?.closeAllConnections()
  proxy?.close()
  await h?.close()
  await op?.stop()
  ca?.remove()
})

test('listens on loopback only and talks https only', async () => {
  const tls = { cert: Buffer.alloc(0), key: Buffer.alloc(0) }
  const log = createLogger({ name: 'bridge', level: 'silent' })
  for (const listen of ['0.0.0.0:0', '192.0.2.10:0', '[::]:0', ':0'])
    await assert.rejects(runMcpBridge({ listen, target: proxyUrl, tls, log }), /loopback addresses only/)
  await assert.rejects(
    runMcpBridge({ listen: '127.0.0.1:0', target: 'http://127.0.0.1:1', tls, log }),
    /must be an https:\/\/ URL/,
  )
})

test('MCP through the bridge: every call reaches artsvc with the client’s own token, which is never logged', async () => {
  const auth = await bearer(op, 'alice')
  const token = auth.authorization!.slice('Bearer '.length)
  const mcp = await connectMcp(bridge.url, auth)
  try {
    assert.ok((await mcp.tools()).includes('artsvc_publish'))
    const p = await mcp.call('artsvc_publish', { title: 'bridged', files: { 'index.html': 'via bridge' } })
    assert.ok(p.ok, JSON.stringify(p.error))
    const listed = await mcp.call('artsvc_list')
    assert.ok(listed.out.artifacts.some((a: { id: string }) => a.id === p.out.artifact.id))
  } finally {
    await mcp.close()
  }
  // No token: the bridge adds none, artsvc's challenge comes back unchanged.
  const anon = await fetch(`${bridge.url}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
  })
  assert.equal(anon.status, 401)
  assert.match(
    anon.headers.get('www-authenticate') ?? '',
    /resource_metadata="http:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-protected-resource\/mcp"/,
  )
  await anon.arrayBuffer()
  const meta = await fetch(`${bridge.url}/.well-known/oauth-protected-resource/mcp`)
  assert.equal(((await meta.json()) as { resource: string }).resource, `${h.base}/mcp`)
  // Only MCP and OAuth metadata are forwarded.
  const other = await fetch(`${bridge.url}/api/v1/me`, { headers: auth })
  assert.equal(other.status, 404)
  await other.arrayBuffer()
  const log = logLines.join('')
  assert.ok(log.includes('"path":"/mcp"'), 'requests are logged')
  assert.ok(!log.includes(token), 'the token is never logged')
  assert.ok(!/authorization/i.test(log))
})

test('SSE responses stream through event by event', async () => {
  // An upstream that sends the second event only after the first has come out of the bridge.
  const server = ca.issueServer(['127.0.0.1'])
  let release: () => void = () => {}
  const released = new Promise<void>((r) => {
    release = r
  })
  let seenAuth: string | undefined
  const sse = createHttpsServer(
    { cert: server.cert, key: server.key, ca: ca.ca, requestCert: true, rejectUnauthorized: true },
    (req, res) => {
      seenAuth = req.headers.authorization
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' })
      res.write('event: message\ndata: {"n":1}\n\n')
      void released.then(() => res.end('event: message\ndata: {"n":2}\n\n'))
    },
  )
  const url = await listen(sse)
  const client = ca.issueClient('sse-bridge')
  const b = await runMcpBridge({
    listen: '127.0.0.1:0',
    target: url,
    tls: { cert: client.cert, key: client.key, ca: ca.ca },
    log: createLogger({ name: 'bridge', level: 'silent' }),
  })
  try {
    const res = await fetch(`${b.url}/mcp`, { headers: { accept: 'text/event-stream', authorization: 'Bearer abc' } })
    assert.equal(res.headers.get('content-type'), 'text/event-stream')
    const reader = res.body!.getReader()
    const first = new TextDecoder().decode((await reader.read()).value)
    assert.match(first, /"n":1/)
    assert.doesNotMatch(first, /"n":2/)
    release()
    let rest = ''
    for (let r = await reader.read(); !r.done; r = await reader.read()) rest += new TextDecoder().decode(r.value)
    assert.match(rest, /"n":2/)
    assert.equal(seenAuth, 'Bearer abc', 'the client’s header passes through unchanged')
  } finally {
    await b.close()
    sse.closeAllConnections()
    sse.close()
  }
})

test('the CLI entry refuses a non-loopback address in one line', async () => {
  const main = new URL('../src/main.ts', import.meta.url).pathname
  const client = ca.issueClient('cli')
  const port = await freePort()
  const r = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [main, 'mcp-bridge', '--listen', `0.0.0.0:${port}`],
      {
        env: {
          PATH: process.env.PATH,
          ARTSVC_URL: proxyUrl,
          ARTSVC_CLIENT_CERT: client.certPath,
          ARTSVC_CLIENT_KEY: client.keyPath,
          ARTSVC_CA_FILE: ca.caPath,
        },
      },
      (err, _stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stderr }),
    )
  })
  assert.equal(r.code, 1)
  assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr)
  assert.match(r.stderr, /loopback addresses only/)
})
