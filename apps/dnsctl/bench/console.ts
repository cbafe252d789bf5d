/**
 * Web console overhead (node --expose-gc bench/console.ts): the same API reads through the console listener
 * (second HTTP server -> the API's router, session lookup, guard) against the API listener itself,
 * in the same run and process, with a real knotd. Reads: the zone list, and the RRsets of a
 * 10,000-record zone (what the RRset view loads). 8 requests in flight, a fixed count each, alternating rounds, best of three; the
 * ratio console/API is the point, the absolute figures depend on the machine.
 */
import { cpus, loadavg } from 'node:os'
import { startConsoleHarness } from '../test/console-helpers.ts'

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

// The tests' harness: a real knotd, dnsctl built on a temporary config, both listeners on free ports.
const h = await startConsoleHarness()
const api = h.base
const consoleBase = h.consoleBase
const put = await fetch(`${api}/v1/zones/${ZONE}`, {
  method: 'PUT',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ role: 'primary', zone_text: `${lines.join('\n')}\n` }),
})
if (put.status !== 201) throw new Error(`zone create answered ${put.status}`)
const signIn = await fetch(`${consoleBase}/console/session`, {
  method: 'POST',
  headers: { 'content-type': 'application/json', origin: consoleBase },
  body: JSON.stringify({ code: new URL(await h.link()).hash.slice('#code='.length) }),
})
const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0]!

/** Requests per second (wall clock), and CPU microseconds per request of this process (client and server). */
async function measure(base: string, path: string, count: number, headers: Record<string, string>) {
  // Garbage left by the previous round is collected here, not billed to this one.
  ;(globalThis as { gc?: () => void }).gc?.()
  const cpu0 = process.cpuUsage()
  const perSecond = await rate(base, path, count, headers)
  const cpu = process.cpuUsage(cpu0)
  return { perSecond, cpuUs: (cpu.user + cpu.system) / count }
}

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
console.log('read                        API: /s  CPU us/req   console: /s  CPU us/req   console/API (rate, CPU)')
for (const [label, path, count] of [
  ['GET /v1/zones', '/v1/zones', 3000],
  ['GET rrsets (10k records)', `/v1/zones/${ZONE}/rrsets`, 200],
] as const) {
  await rate(api, path, Math.ceil(count / 10), {}) // warm-up
  await rate(consoleBase, path, Math.ceil(count / 10), { cookie })
  // Three rounds in alternating order, best of each: a busy machine slows one round, not one listener.
  // CPU time per request is the steadier figure on a shared machine.
  const a = { perSecond: 0, cpuUs: Number.POSITIVE_INFINITY }
  const c = { perSecond: 0, cpuUs: Number.POSITIVE_INFINITY }
  for (let round = 0; round < 3; round++) {
    const order = [
      [a, api, {}],
      [c, consoleBase, { cookie }],
    ] as const
    for (const [best, base, headers] of round % 2 ? [...order].reverse() : order) {
      const m = await measure(base, path, count, headers)
      best.perSecond = Math.max(best.perSecond, m.perSecond)
      best.cpuUs = Math.min(best.cpuUs, m.cpuUs)
    }
  }
  console.log(
    `${label.padEnd(26)} ${a.perSecond.toFixed(0).padStart(7)} ${a.cpuUs.toFixed(0).padStart(11)} ${c.perSecond.toFixed(0).padStart(13)} ${c.cpuUs.toFixed(0).padStart(11)}   ${(c.perSecond / a.perSecond).toFixed(2)}, ${(c.cpuUs / a.cpuUs).toFixed(2)}`,
  )
}
await h.close()
