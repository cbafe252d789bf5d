/**
 * The official MCP conformance suite (`@modelcontextprotocol/conformance`) and one scripted
 * call with the MCP Inspector's CLI mode, against a real artsvc. Neither sends a token, so
 * a small test proxy in front adds a valid bearer token to every request (and nothing else).
 *
 * Scenarios run: server-initialize, ping, tools-list, dns-rebinding-protection (a request
 * whose Host is not the public origin's is refused with 421 before anything runs). Skipped,
 * because they need a server surface artsvc does not have: the tools-call-* and
 * json-schema-2020-12 scenarios call fixed test tools (test_simple_text,
 * json_schema_2020_12_tool, …), logging/completion/resources/prompts scenarios
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
  const auth = await bearer(op, 'alice')
  // The proxy is artsvc's public origin (as a reverse proxy would be): it passes the Host and
  // Origin through untouched, so artsvc's own Host check meets the DNS-rebinding scenario.
  proxy = createServer((req, res) => {
    const up = request(
      { host: '127.0.0.1', port: h.port, method: req.method, path: req.url, headers: { ...req.headers, ...auth } },
      (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers)
        r.pipe(res)
      },
    )
    req.pipe(up)
  })
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r))
  const origin = `http://127.0.0.1:${(proxy.address() as { port: number }).port}`
  h = await startArtsvc({ op, env: { ARTSVC_PUBLIC_URL: origin } })
  url = `${origin}/mcp`
})
after(async () => {
  proxy?.closeAllConnections()
  proxy?.close()
  await h?.close()
  await op?.stop()
})

for (const scenario of ['server-initialize', 'ping', 'tools-list', 'dns-rebinding-protection']) {
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
