/**
 * Resolver answer rate (node bench/resolver-answers.ts [names]): one kresd with the compiled
 * RPZ of N blocked names (default 1M) in front of a knotd. Measures answers per second for
 * blocked names (random picks from the list: the RPZ lookup) against unblocked names answered
 * from kresd's cache (the baseline), in the same run, same client: one UDP socket with 256
 * queries in flight, 50,000 queries per variant. The client is Node on the same 2 cores, so the
 * absolute figures are a lower bound; the ratio is the point.
 */
import { createSocket } from 'node:dgram'
import { cpus } from 'node:os'
import { join } from 'node:path'
import { startKnot, startKresd, tempDir } from '@gatehouse/testkit'
import dnsPacket from 'dns-packet'
import { writeRpz } from '../src/blocklists/rpz.ts'

const N = Number(process.argv[2] ?? 1_000_000)
const QUERIES = 50_000
const IN_FLIGHT = 256

const names = Array.from({ length: N }, (_, i) => `ad${i}.tracker${i % 997}.test`)
const dir = tempDir('dnsctl-bench-rpz-')
const rpz = join(dir.path, 'blocklist.rpz')
await writeRpz(rpz, { blocked: names, passthru: [] }, 'bench')
const zone = `$ORIGIN example.test.\n$TTL 3600\n@ SOA ns1 hostmaster 1 3600 900 604800 300\n@ NS ns1\nns1 A 192.0.2.1\n${Array.from({ length: 100 }, (_, i) => `h${i} A 192.0.2.${i}`).join('\n')}\n`
const knot = await startKnot({ zones: { 'example.test': zone } })
const t0 = performance.now()
const kresd = await startKresd({
  stub: `127.0.0.1@${knot.port}`,
  rpz: '$TTL 60\n@ SOA localhost. nobody.invalid. 1 3600 900 86400 60\n',
})
// Swap in the big list and wait until kresd answers from it.
const { rename, copyFile } = await import('node:fs/promises')
await copyFile(rpz, `${kresd.instances[0]!.rpzFile}.tmp`)
await rename(`${kresd.instances[0]!.rpzFile}.tmp`, kresd.instances[0]!.rpzFile)

const socket = createSocket('udp4')
await new Promise<void>((r) => socket.bind(0, '127.0.0.1', () => r()))
const pending = new Map<number, (rcode: string) => void>()
socket.on('message', (msg) => {
  const res = dnsPacket.decode(msg) as dnsPacket.DecodedPacket & { rcode?: string }
  const done = pending.get(res.id ?? -1)
  if (done) {
    pending.delete(res.id!)
    done(res.rcode ?? 'NOERROR')
  }
})
let nextId = 0
function ask(name: string): Promise<string> {
  const id = nextId++ & 0xffff
  return new Promise((resolve) => {
    // A lost datagram (or a query queued behind the RPZ load) times out instead of hanging.
    const timer = setTimeout(() => {
      pending.delete(id)
      resolve('TIMEOUT')
    }, 2000)
    pending.set(id, (rcode) => {
      clearTimeout(timer)
      resolve(rcode)
    })
    socket.send(
      dnsPacket.encode({
        type: 'query',
        id,
        flags: dnsPacket.RECURSION_DESIRED,
        questions: [{ type: 'A', name, class: 'IN' }],
      }),
      kresd.instances[0]!.port,
      '127.0.0.1',
    )
  })
}
const deadline = Date.now() + 60_000
while ((await ask(names[N - 1]!)) !== 'NXDOMAIN') {
  if (Date.now() > deadline) throw new Error('kresd did not load the list')
}
const loadSeconds = (performance.now() - t0) / 1000
for (let i = 0; i < 100; i++) await ask(`h${i}.example.test`) // warm the cache

async function rate(pick: (i: number) => string, expect: string): Promise<number> {
  let sent = 0
  let wrong = 0
  const start = performance.now()
  const worker = async () => {
    while (sent < QUERIES) {
      const rcode = await ask(pick(sent++))
      if (rcode !== expect) wrong++
    }
  }
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker))
  if (wrong > QUERIES / 100) throw new Error(`${wrong} answers were not ${expect}`)
  return QUERIES / ((performance.now() - start) / 1000)
}
const cached = await rate((i) => `h${i % 100}.example.test`, 'NOERROR')
const blocked = await rate((i) => names[(i * 7919) % N]!, 'NXDOMAIN')
console.log(`CPU: ${cpus()[0]?.model}; kresd with ${N} blocked names (start + load ${loadSeconds.toFixed(1)} s)`)
console.log(`baseline, unblocked cached names: ${Math.round(cached).toLocaleString('en')} answers/s`)
console.log(`blocked names (RPZ): ${Math.round(blocked).toLocaleString('en')} answers/s`)
console.log(`ratio blocked/cached: ${(blocked / cached).toFixed(2)}x`)
socket.close()
await kresd.stop()
await knot.stop()
dir.remove()
