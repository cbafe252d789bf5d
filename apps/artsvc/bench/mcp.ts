/**
 * MCP against REST on the same server and data, in the same run (`npm run bench:mcp -w apps/artsvc`):
 *
 * 1. `tools/call artsvc_list` through the SDK's client against `GET /api/v1/artifacts`
 *    (fetch, body parsed as JSON: an agent reads the list either way), 50 artifacts,
 *    8 calls in flight, alternating rounds; ratio of the medians, and the server's CPU time
 *    per request of each (from /proc: far less sensitive to other load than requests/s).
 * 2. Publishing a 1 MiB bundle (stored, random bytes): `artsvc_publish` with the ZIP inline
 *    (base64) against the REST upload flow (create, PUT, commit); 10 each, alternating.
 *
 * artsvc runs as a child process (SQLite, filesystem storage), as it would in production;
 * the clients run here. The testkit OpenID provider mints the bearer token. Loopback only.
 * ARTSVC_BENCH_PROFILE=<dir> writes a CPU profile of the server.
 */
import { randomBytes } from 'node:crypto'
import { cpus, loadavg } from 'node:os'
import { join } from 'node:path'
import { freePort, processCpu, startChild, startOidcProvider, tempDir } from '@gatehouse/testkit'
import { AUDIENCE, baseEnv, bearer, SCOPE } from '../test/helpers/harness.ts'
import { connectMcp } from '../test/helpers/mcp-client.ts'
import { buildZip, sampleBundle } from '../test/helpers/zip-builder.ts'

const ROUNDS = 8
const ROUND_MS = 1500
const IN_FLIGHT = 8
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const dir = tempDir('artsvc-bench-mcp-')
const op = await startOidcProvider({ redirectUris: ['http://127.0.0.1:9/cb'], audience: AUDIENCE, scopes: [SCOPE] })
const port = await freePort()
const base = `http://127.0.0.1:${port}`
const child = await startChild({
  name: 'artsvc',
  command: process.execPath,
  args: [
    ...(process.env.ARTSVC_BENCH_PROFILE ? ['--cpu-prof', '--cpu-prof-dir', process.env.ARTSVC_BENCH_PROFILE] : []),
    new URL('../src/main.ts', import.meta.url).pathname,
  ],
  env: { PATH: process.env.PATH ?? '', ...baseEnv(join(dir.path, 'artsvc'), port, op), ARTSVC_LOG_LEVEL: 'warn' },
  logFile: join(dir.path, 'artsvc.log'),
  probe: async () => (await fetch(`${base}/readyz`)).status === 204,
})
/** Server CPU time so far (µs). */
const serverCpu = () => {
  const c = processCpu(child.pid)
  return (c.user + c.system) * 1e6
}

async function restPublish(zip: Buffer, title: string) {
  const created = await fetch(`${base}/api/v1/artifacts/uploads`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ title, entrypoint: 'index.html' }),
  })
  const s = (await created.json()) as { id: string; upload_url: string; upload_token: string }
  const put = await fetch(s.upload_url, {
    method: 'PUT',
    headers: { 'x-artsvc-upload-token': s.upload_token, 'content-type': 'application/zip' },
    body: new Uint8Array(zip),
  })
  await put.arrayBuffer()
  const commit = await fetch(`${base}/api/v1/uploads/${s.id}/commit`, {
    method: 'POST',
    headers: { ...auth, 'x-artsvc-upload-token': s.upload_token },
  })
  const body = await commit.text()
  if (put.status !== 200 || commit.status !== 201) throw new Error(`REST publish failed: ${commit.status} ${body}`)
}

const auth = await bearer(op, 'alice')
for (let i = 0; i < 50; i++) await restPublish(sampleBundle(), `bench ${i}`)
const mcp = await connectMcp(base, auth)

interface Round {
  rps: number
  cpuUs: number
}
async function round(call: () => Promise<void>, ms = ROUND_MS): Promise<Round> {
  const cpu0 = serverCpu()
  const t0 = performance.now()
  const end = t0 + ms
  let n = 0
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (performance.now() < end) {
        await call()
        n++
      }
    }),
  )
  const seconds = (performance.now() - t0) / 1000
  return { rps: n / seconds, cpuUs: (serverCpu() - cpu0) / n }
}
const rest = async () => {
  const r = await fetch(`${base}/api/v1/artifacts`, { headers: auth })
  const body = (await r.json()) as { artifacts: unknown[] }
  if (r.status !== 200 || body.artifacts.length !== 50) throw new Error(`REST ${r.status}`)
}
const tool = async () => {
  const r = await mcp.call('artsvc_list')
  if (!r.ok || r.out.artifacts.length !== 50) throw new Error('MCP list failed')
}

async function main() {
  // ARTSVC_BENCH_ONLY=mcp|rest: load one side only (for a CPU profile of that side); no ratio then.
  const only = process.env.ARTSVC_BENCH_ONLY
  if (only === 'mcp' || only === 'rest') {
    const r = await round(only === 'mcp' ? tool : rest, ROUNDS * ROUND_MS)
    console.log(`${only} only: ${r.rps.toFixed(0)} req/s, ${r.cpuUs.toFixed(0)} µs server CPU each`)
  } else await compare()
}

async function compare() {
  await round(rest, 2000)
  await round(tool, 2000)
  const rounds: { rest: Round; mcp: Round }[] = []
  for (let i = 0; i < ROUNDS; i++) rounds.push({ rest: await round(rest), mcp: await round(tool) })

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
    await restPublish(a, 'rest 1 MiB')
    restMs.push(performance.now() - t0)
    const b = bundle().toString('base64')
    t0 = performance.now()
    const r = await mcp.call('artsvc_publish', { title: 'mcp 1 MiB', bundle_base64: b })
    if (!r.ok) throw new Error(JSON.stringify(r.error))
    mcpMs.push(performance.now() - t0)
  }

  const pick = (k: 'rest' | 'mcp', f: 'rps' | 'cpuUs') => median(rounds.map((r) => r[k][f]))
  console.log(`CPU: ${cpus()[0]?.model} × ${cpus().length}, Node ${process.version}`)
  for (const [i, r] of rounds.entries())
    console.log(
      `  round ${i + 1}: REST ${r.rest.rps.toFixed(0)} req/s (${r.rest.cpuUs.toFixed(0)} µs server CPU each), ` +
        `MCP ${r.mcp.rps.toFixed(0)} req/s (${r.mcp.cpuUs.toFixed(0)} µs), ratio ${(r.mcp.rps / r.rest.rps).toFixed(2)}`,
    )
  console.log(
    `list: REST GET /api/v1/artifacts ${pick('rest', 'rps').toFixed(0)} req/s, MCP tools/call artsvc_list ` +
      `${pick('mcp', 'rps').toFixed(0)} req/s, ratio ${(pick('mcp', 'rps') / pick('rest', 'rps')).toFixed(2)} (goal >= 0.5)`,
  )
  console.log(
    `     server CPU per request: REST ${pick('rest', 'cpuUs').toFixed(0)} µs, MCP ${pick('mcp', 'cpuUs').toFixed(0)} µs, ` +
      `ratio REST/MCP ${(pick('rest', 'cpuUs') / pick('mcp', 'cpuUs')).toFixed(2)}`,
  )
  console.log(
    `publish 1 MiB: REST flow ${median(restMs).toFixed(1)} ms, MCP inline ${median(mcpMs).toFixed(1)} ms, ` +
      `throughput ratio ${(median(restMs) / median(mcpMs)).toFixed(2)}`,
  )
  console.log(
    `load average at the end: ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  )
}

try {
  await main()
} finally {
  await mcp.close()
  await child.stop()
  await op.stop()
  dir.remove()
}
