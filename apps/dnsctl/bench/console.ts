/**
 * Web console overhead (node bench/console.ts): the same API reads through the console listener
 * (second HTTP server -> the API's router, session lookup, guard) against the API listener itself,
 * in the same run and process, with a real knotd. Reads: the zone list, and the RRsets of a
 * 10,000-record zone (what the RRset view loads). 8 requests in flight, a fixed count each, alternating rounds, best of three; the
 * ratio console/API is the point, the absolute figures depend on the machine.
 */
import { cpus, loadavg } from 'node:os'
import { PassThrough } from 'node:stream'
import { createLogger, openDatabase } from '@gatehouse/kit'
import { startKnot, tempDir } from '@gatehouse/testkit'
import { loadDnsctlConfig } from '../src/config.ts'
import { migrations } from '../src/db/migrations/index.ts'
import type { DB } from '../src/db/schema.ts'
import { buildServer } from '../src/server.ts'

const IN_FLIGHT = 8
const ZONE = 'bench.test'
const lines = [
  '$ORIGIN bench.test.',
  '$TTL 3600',
  '@ SOA ns1 hostmaster 1 3600 900 604800 300',
  '@ NS ns1',
  'ns1 A 192.0.2.1',
]
for (let i = 0; lines.length < 10_002; i++) lines.push(`h${i} 300 A 10.0.${(i >> 8) & 255}.${i & 255}`)

const knot = await startKnot()
const dir = tempDir('dnsctl-bench-console-')
const config = loadDnsctlConfig([], {
  DNSCTL_STATE_DIR: dir.path,
  DNSCTL_KNOT_SOCKET: knot.controlSocket,
  DNSCTL_KNOT_ZONES_DIR: knot.zonesDir,
  DNSCTL_KNOT_ADDRESS: `127.0.0.1:${knot.port}`,
})
const database = await openDatabase<DB>({ url: config.database, migrations })
const logger = createLogger({ name: 'dnsctl', level: 'silent', destination: new PassThrough() })
const dnsctl = await buildServer(config, { db: database.db, logger })
await dnsctl.start()
const api = await dnsctl.app.listen({ host: '127.0.0.1', port: 0 })
const consoleBase = await dnsctl.console.listener.listen('127.0.0.1', 0)
const put = await fetch(`${api}/v1/zones/${ZONE}`, {
  method: 'PUT',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ role: 'primary', zone_text: `${lines.join('\n')}\n` }),
})
if (put.status !== 201) throw new Error(`zone create answered ${put.status}`)
const link = await (await fetch(`${api}/console/links`, { method: 'POST' })).json()
const signIn = await fetch(`${consoleBase}/console/session`, {
  method: 'POST',
  headers: { 'content-type': 'application/json', origin: consoleBase },
  body: JSON.stringify({ code: new URL(link.url).hash.slice('#code='.length) }),
})
const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0]!

async function rate(base: string, path: string, count: number, headers: Record<string, string>): Promise<number> {
  let next = 0
  const worker = async () => {
    while (next++ < count) {
      const res = await fetch(base + path, { headers })
      if (res.status !== 200) throw new Error(`${base}${path}: ${res.status}`)
      await res.arrayBuffer()
    }
  }
  const t0 = performance.now()
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker))
  return count / ((performance.now() - t0) / 1000)
}

console.log(`CPU: ${cpus()[0]?.model} x${cpus().length}; load average ${loadavg()[0]!.toFixed(1)}`)
console.log('read                           API listener   console listener   console/API')
for (const [label, path, count] of [
  ['GET /v1/zones', '/v1/zones', 3000],
  ['GET rrsets (10k records)', `/v1/zones/${ZONE}/rrsets`, 200],
] as const) {
  await rate(api, path, Math.ceil(count / 10), {}) // warm-up
  await rate(consoleBase, path, Math.ceil(count / 10), { cookie })
  // Alternating rounds, best of three each: a busy machine slows one round, not one listener.
  let a = 0
  let c = 0
  for (let round = 0; round < 3; round++) {
    a = Math.max(a, await rate(api, path, count, {}))
    c = Math.max(c, await rate(consoleBase, path, count, { cookie }))
  }
  console.log(
    `${label.padEnd(30)} ${a.toFixed(0).padStart(8)} /s   ${c.toFixed(0).padStart(12)} /s   ${(c / a).toFixed(2).padStart(9)}`,
  )
}
await dnsctl.close()
await database.close()
await knot.stop()
dir.remove()
