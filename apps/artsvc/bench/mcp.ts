/**
 * MCP against REST on the same server and data, in the same run (`node bench/mcp.ts`):
 *
 * 1. `tools/call artsvc_list` through the SDK's client against `GET /api/v1/artifacts`
 *    (fetch), 50 artifacts, 8 calls in flight, alternating 1 s rounds; ratio of the medians.
 * 2. Publishing a 1 MiB bundle (stored, random bytes): `artsvc_publish` with the ZIP inline
 *    (base64) against the REST upload flow (create, PUT, commit); 10 each, alternating.
 *
 * artsvc runs in this process (SQLite, filesystem storage) with the testkit OpenID
 * provider; the load shares the process, alike for both sides. Loopback only.
 */
import { randomBytes } from 'node:crypto'
import { cpus } from 'node:os'
import { startOidcProvider } from '@gatehouse/testkit'
import { AUDIENCE, bearer, mustPublish, SCOPE, startArtsvc } from '../test/helpers/harness.ts'
import { connectMcp } from '../test/helpers/mcp-client.ts'
import { buildZip, sampleBundle } from '../test/helpers/zip-builder.ts'

const ROUNDS = 6
const ROUND_MS = 1000
const IN_FLIGHT = 8
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const op = await startOidcProvider({ redirectUris: ['http://127.0.0.1:9/cb'], audience: AUDIENCE, scopes: [SCOPE] })
const h = await startArtsvc({ op, env: { ARTSVC_LOG_LEVEL: 'warn' } })
const auth = await bearer(op, 'alice')
for (let i = 0; i < 50; i++) await mustPublish(h, auth, sampleBundle(), { title: `bench ${i}` })
const mcp = await connectMcp(h.base, auth)

async function rate(call: () => Promise<void>): Promise<number> {
  const end = performance.now() + ROUND_MS
  let n = 0
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (performance.now() < end) {
        await call()
        n++
      }
    }),
  )
  return n / (ROUND_MS / 1000)
}
const rest = async () => {
  const r = await fetch(`${h.base}/api/v1/artifacts`, { headers: auth })
  if (r.status !== 200) throw new Error(`REST ${r.status}`)
  await r.arrayBuffer()
}
const tool = async () => {
  const r = await mcp.call('artsvc_list')
  if (!r.ok || r.out.artifacts.length !== 50) throw new Error('MCP list failed')
}
await rate(rest)
await rate(tool)
const restRates: number[] = []
const mcpRates: number[] = []
for (let i = 0; i < ROUNDS; i++) {
  restRates.push(await rate(rest))
  mcpRates.push(await rate(tool))
}

const bundle = () =>
  buildZip([
    { name: 'index.html', data: '<p>x</p>' },
    { name: 'blob.bin', data: randomBytes(1024 * 1024), method: 0 },
  ])
const restMs: number[] = []
const mcpMs: number[] = []
for (let i = 0; i < 10; i++) {
  const a = bundle()
  let t0 = performance.now()
  await mustPublish(h, auth, a, { title: 'rest 1 MiB' })
  restMs.push(performance.now() - t0)
  const b = bundle().toString('base64')
  t0 = performance.now()
  const r = await mcp.call('artsvc_publish', { title: 'mcp 1 MiB', bundle_base64: b })
  if (!r.ok) throw new Error(JSON.stringify(r.error))
  mcpMs.push(performance.now() - t0)
}

const rRest = median(restRates)
const rMcp = median(mcpRates)
console.log(`CPU: ${cpus()[0]?.model} × ${cpus().length}`)
console.log(
  `list: REST GET /api/v1/artifacts ${rRest.toFixed(0)} req/s, MCP tools/call artsvc_list ${rMcp.toFixed(0)} req/s, ratio ${(rMcp / rRest).toFixed(2)} (goal >= 0.5)`,
)
console.log(
  `publish 1 MiB: REST flow ${median(restMs).toFixed(1)} ms, MCP inline ${median(mcpMs).toFixed(1)} ms, throughput ratio ${(median(restMs) / median(mcpMs)).toFixed(2)}`,
)
await mcp.close()
await h.close()
await op.stop()
