/**
 * The official MCP conformance suite (`@modelcontextprotocol/conformance`) and one scripted
 * call with the MCP Inspector's CLI mode, against a real artsvc. Neither sends a token, so
 * a small test proxy in front adds a valid bearer token to every request (and nothing else).
 *
 * Scenarios run: server-initialize, ping, tools-list. Skipped, because they need a server
 * surface artsvc does not have: the tools-call-* scenarios call fixed test tools
 * (test_simple_text, test_image_content, …), logging/completion/resources/prompts scenarios
 * need capabilities artsvc does not offer, elicitation/sampling need client round trips none
 * of our tools make, and the SSE polling/multiple-stream scenarios need a stateful session.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { createServer, request, type Server } from 'node:http'
import { after, before, test } from 'node:test'
import { type OidcProvider, startOidcProvider } from '@gatehouse/testkit'
import { AUDIENCE, bearer, type Harness, SCOPE, startArtsvc } from './helpers/harness.ts'

const BIN = new URL('../../../node_modules/.bin/', import.meta.url).pathname
let op: OidcProvider
let h: Harness
let proxy: Server
let url: string

function run(cmd: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(`${BIN}${cmd}`, args, { timeout: 120_000, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    )
  })
}

before(async () => {
  op = await startOidcProvider({ redirectUris: ['http://127.0.0.1:9/unused'], audience: AUDIENCE, scopes: [SCOPE] })
  h = await startArtsvc({ op })
  const auth = await bearer(op, 'alice')
  proxy = createServer((req, res) => {
    const up = request(
      {
        host: '127.0.0.1',
        port: h.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: `127.0.0.1:${h.port}`, ...auth },
      },
      (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers)
        r.pipe(res)
      },
    )
    req.pipe(up)
  })
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r))
  url = `http://127.0.0.1:${(proxy.address() as { port: number }).port}/mcp`
})
after(async () => {
  proxy?.closeAllConnections()
  proxy?.close()
  await h?.close()
  await op?.stop()
})

for (const scenario of ['server-initialize', 'ping', 'tools-list']) {
  test(`conformance: ${scenario}`, async () => {
    const r = await run('conformance', ['server', '--url', url, '--scenario', scenario])
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`)
    assert.match(r.stdout, /Passed: (\d+)\/\1, 0 failed/)
  })
}

test('MCP Inspector CLI: one scripted tools/call', async () => {
  const r = await run('mcp-inspector', [
    '--cli',
    url,
    '--transport',
    'http',
    '--method',
    'tools/call',
    '--tool-name',
    'artsvc_list',
  ])
  assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`)
  const out = JSON.parse(r.stdout) as { structuredContent?: { artifacts: unknown[] }; isError?: boolean }
  assert.notEqual(out.isError, true)
  assert.ok(Array.isArray(out.structuredContent?.artifacts))
})
