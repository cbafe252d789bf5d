/**
 * The MCP hot path (mcp/direct.ts): a single 2025-era `tools/call`, `tools/list` or `ping`
 * is answered by a server instance that stays connected to a transport of ours, with the
 * tool's serialized structured content reused in the answer. These tests check that it
 * answers exactly what the SDK's own transport answers for the same request (a batch of
 * one is never taken by the hot path, so it is the SDK's answer; the SDK answers it with
 * the one response), that every request the
 * SDK's transport would refuse or treat differently is left to it, and that the spliced
 * answer is the same JSON as a full serialization, on SQLite and PostgreSQL.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { DirectTransport, directEligible, encodeAnswer, rememberSerialized } from '../src/mcp/direct.ts'
import { type Backends, bearer, type Harness, startArtsvc, startBackends } from './helpers/harness.ts'
import { connectMcp } from './helpers/mcp-client.ts'

const VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26']
const OK_HEADERS = { accept: 'application/json, text/event-stream', 'content-type': 'application/json' }
const call = { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'artsvc_list', arguments: {} } }

describe('direct path eligibility: only what the SDK transport would serve the same way', () => {
  test('a 2025-era tools/call, tools/list or ping with good headers is eligible', () => {
    assert.deepEqual(directEligible(OK_HEADERS, call, VERSIONS), call)
    assert.ok(directEligible({ ...OK_HEADERS, 'mcp-protocol-version': '2025-11-25' }, call, VERSIONS))
    assert.ok(directEligible(OK_HEADERS, { jsonrpc: '2.0', id: 'a', method: 'tools/list' }, VERSIONS))
    assert.ok(directEligible(OK_HEADERS, { jsonrpc: '2.0', id: 1, method: 'ping' }, VERSIONS))
  })
  test('everything else is left to the SDK transport', () => {
    const refused: [string, Record<string, string>, unknown][] = [
      ['no event streams accepted', { ...OK_HEADERS, accept: 'application/json' }, call],
      ['no JSON accepted', { ...OK_HEADERS, accept: 'text/event-stream' }, call],
      ['not JSON', { ...OK_HEADERS, 'content-type': 'text/plain' }, call],
      ['unsupported version', { ...OK_HEADERS, 'mcp-protocol-version': '1999-01-01' }, call],
      ['2026-07-28 era', { ...OK_HEADERS, 'mcp-protocol-version': '2026-07-28' }, call],
      ['batch', OK_HEADERS, [call]],
      ['notification', OK_HEADERS, { jsonrpc: '2.0', method: 'notifications/initialized' }],
      ['initialize', OK_HEADERS, { jsonrpc: '2.0', id: 1, method: 'initialize', params: {} }],
      ['not JSON-RPC', OK_HEADERS, { jsonrpc: '1.0', id: 1, method: 'ping' }],
      ['bad id', OK_HEADERS, { jsonrpc: '2.0', id: { x: 1 }, method: 'ping' }],
      ['null body', OK_HEADERS, null],
    ]
    for (const [why, headers, body] of refused) assert.equal(directEligible(headers, body, VERSIONS), undefined, why)
  })
})

describe('direct answer encoding', () => {
  const structured = { artifacts: [{ id: 'a"b', title: 'ü\n</script>', n: 1 }], more: null }
  const text = JSON.stringify(structured)
  const message = (sc: unknown, t = text) => ({
    result: { content: [{ type: 'text', text: t }], structuredContent: sc },
    jsonrpc: '2.0' as const,
    id: 3,
  })

  test('the remembered text is spliced in: the same JSON as serializing the whole', () => {
    const key = {}
    rememberSerialized(key, structured, text)
    // The SDK's result check copies the structured content (same members): still reused.
    const m = message({ ...structured })
    const out = encodeAnswer(m, key)
    assert.deepEqual(JSON.parse(out), JSON.parse(JSON.stringify(m)))
    assert.ok(out.endsWith(`"structuredContent":${text}}}`), out)
  })
  test('anything that differs is serialized in full', () => {
    const key = {}
    rememberSerialized(key, structured, text)
    for (const m of [
      message({ ...structured, artifacts: [] }),
      message({ more: null, artifacts: structured.artifacts }),
      message({ ...structured, extra: 1 }),
      message(structured, `${text} `),
    ]) {
      assert.equal(encodeAnswer(m, key), JSON.stringify(m))
    }
    assert.equal(encodeAnswer(message(structured), {}), JSON.stringify(message(structured)))
    assert.equal(encodeAnswer(message(structured), undefined), JSON.stringify(message(structured)))
    const error = { jsonrpc: '2.0' as const, id: 3, error: { code: -32602, message: 'x' } }
    assert.equal(encodeAnswer(error, key), JSON.stringify(error))
  })
  test('the transport answers only the pending request and refuses once closed', async () => {
    const t = new DirectTransport()
    let closed = 0
    t.onclose = () => closed++
    t.onmessage = (m) => {
      const id = (m as { id: number }).id
      void t.send({ jsonrpc: '2.0', method: 'notifications/message', params: {} } as never)
      void t.send({ jsonrpc: '2.0', id: id + 1, result: {} })
      void t.send({ jsonrpc: '2.0', id, result: { ok: true } })
    }
    assert.deepEqual(await t.exchange({ jsonrpc: '2.0', id: 1, method: 'ping' }, undefined), {
      jsonrpc: '2.0',
      id: 1,
      result: { ok: true },
    })
    t.onmessage = () => {}
    const pending = t.exchange({ jsonrpc: '2.0', id: 2, method: 'ping' }, undefined)
    await assert.rejects(t.exchange({ jsonrpc: '2.0', id: 3, method: 'ping' }, undefined), /busy/)
    await t.close()
    await assert.rejects(pending, /closed/)
    await assert.rejects(t.exchange({ jsonrpc: '2.0', id: 4, method: 'ping' }, undefined), /closed/)
    assert.equal(closed, 1)
  })
})

let backends: Backends
before(async () => {
  backends = await startBackends()
})
after(() => backends?.stop())

for (const dbName of ['sqlite', 'postgres'] as const) {
  describe(`direct path against the SDK transport on ${dbName}`, () => {
    let h: Harness
    before(async () => {
      const url = dbName === 'postgres' ? await backends.pg.createDatabase() : undefined
      h = await startArtsvc({ op: backends.op, ...(url ? { databaseUrl: url } : {}) })
    })
    after(() => h?.close())

    const post = async (sub: string, body: unknown, headers: Record<string, string> = {}) => {
      const r = await fetch(`${h.base}/mcp`, {
        method: 'POST',
        headers: { ...(await bearer(backends.op, sub)), ...OK_HEADERS, ...headers },
        body: JSON.stringify(body),
      })
      const text = await r.text()
      return {
        status: r.status,
        type: r.headers.get('content-type') ?? '',
        raw: text,
        json: text ? JSON.parse(text) : undefined,
      }
    }

    test('the same answers as the SDK transport, for tools, errors and both audiences', async () => {
      const alice = await connectMcp(h.base, await bearer(backends.op, 'alice'))
      for (let i = 0; i < 3; i++) {
        const p = await alice.call('artsvc_publish', { title: `page "${i}" ü`, files: { 'index.html': `<p>${i}</p>` } })
        assert.ok(p.ok, JSON.stringify(p.error))
      }
      await alice.close()
      const requests = [
        call,
        { jsonrpc: '2.0', id: 'x', method: 'tools/list' },
        { jsonrpc: '2.0', id: 8, method: 'ping' },
        // Refused by our input schema (a tool error result) and an unknown tool (a JSON-RPC error).
        { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'artsvc_list', arguments: { x: 1 } } },
        { jsonrpc: '2.0', id: 10, method: 'tools/call', params: { name: 'artsvc_nope', arguments: {} } },
        { jsonrpc: '2.0', id: 11, method: 'tools/call', params: { name: 'artsvc_admin_list', arguments: {} } },
        { jsonrpc: '2.0', id: 12, method: 'tools/call', params: { name: 'artsvc_get', arguments: { artifact: 'x' } } },
      ]
      for (const sub of ['alice', 'root-admin']) {
        for (const body of requests) {
          const direct = await post(sub, body, { 'mcp-protocol-version': '2025-11-25' })
          const sdk = await post(sub, [body], { 'mcp-protocol-version': '2025-11-25' })
          assert.equal(direct.status, 200)
          assert.equal(sdk.status, 200)
          assert.match(direct.type, /^application\/json/)
          // The SDK answers a batch of one with the one response, not an array.
          assert.deepEqual(direct.json, sdk.json, `${sub} ${JSON.stringify(body)}`)
          const result = direct.json.result
          if (result?.structuredContent) assert.deepEqual(JSON.parse(result.content[0].text), result.structuredContent)
        }
      }
      const list = await post('alice', call)
      assert.equal(list.json.result.structuredContent.artifacts.length, 3)
      // Answered by the direct path (its member order), with the tool's text spliced in
      // as the structured content rather than serialized again.
      const listText = list.json.result.content[0].text
      assert.ok(list.raw.startsWith('{"jsonrpc":"2.0","id":7,"result":{"content":'), list.raw.slice(0, 80))
      assert.ok(list.raw.endsWith(`"structuredContent":${listText}}}`))
      const admin = await post('root-admin', { ...call, params: { name: 'artsvc_admin_list', arguments: {} } })
      assert.equal(admin.json.result.structuredContent.artifacts.length, 3)
    })

    test('requests the SDK transport refuses are still refused the same way', async () => {
      const version = await post('alice', call, { 'mcp-protocol-version': '1999-01-01' })
      assert.equal(version.status, 400)
      const accept = await post('alice', call, { accept: 'application/json' })
      assert.equal(accept.status, 406)
      const type = await post('alice', call, { 'content-type': 'text/plain' })
      assert.equal(type.status, 415)
      const note = await post('alice', { jsonrpc: '2.0', method: 'notifications/initialized' })
      assert.equal(note.status, 202)
    })
  })
}

describe('structured output is still checked on every call', () => {
  test('against the advertised JSON Schema: wrong types, missing and unknown members are refused', async () => {
    const { outputSchema } = await import('../src/mcp/tools.ts')
    const { outputs } = await import('../src/mcp/schemas.ts')
    const std = outputSchema(outputs.list)['~standard'] as unknown as {
      validate(v: unknown): { value?: unknown; issues?: unknown[] }
    }
    const row = {
      id: 'a',
      title: 't',
      visibility: 'private',
      latest_version: 1,
      created_at: 'x',
      updated_at: 'x',
      url: 'u',
    }
    assert.equal(std.validate({ artifacts: [row] }).issues, undefined)
    for (const bad of [
      { artifacts: [{ ...row, visibility: 'public' }] },
      { artifacts: [{ ...row, latest_version: 1.5 }] },
      { artifacts: [{ ...row, id: undefined }] },
      { artifacts: [{ ...row, secret: 'x' }] },
      { artifacts: 'none' },
      {},
    ])
      assert.ok(std.validate(JSON.parse(JSON.stringify(bad))).issues?.length, JSON.stringify(bad))
  })
})
