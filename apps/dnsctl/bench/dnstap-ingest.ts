/**
 * dnstap ingestion benchmark (node bench/dnstap-ingest.ts [frames]): a Frame Streams byte stream
 * of dnstap CLIENT_RESPONSE messages (random names from 50k, 1k clients, a tenth blocked) pushed
 * through the reader in 64 KiB chunks, as the socket delivers it: frame split + protobuf decode
 * + DNS response summary + bucket rankings (aggregate mode). Baseline in the same run: only
 * splitting the same stream into frames. One core; goal >= 100k frames/s.
 */
import { cpus } from 'node:os'
import dnsPacket from 'dns-packet'
import { decodeDnstap } from '../src/analytics/dnstap.ts'
import { FrameDecoder } from '../src/analytics/framestream.ts'
import { AnalyticsService } from '../src/analytics/service.ts'

const N = Number(process.argv[2] ?? 500_000)

function varint(n: number): Buffer {
  const out: number[] = []
  while (n >= 0x80) {
    out.push((n % 128) | 0x80)
    n = Math.floor(n / 128)
  }
  out.push(n)
  return Buffer.from(out)
}
const bytes = (f: number, b: Uint8Array) => Buffer.concat([varint(f * 8 + 2), varint(b.length), b])
const int = (f: number, n: number) => Buffer.concat([varint(f * 8), varint(n)])

const distinct: Buffer[] = []
for (let i = 0; i < 5000; i++) {
  const name = `n${i}.site${i % 50}.example`
  const blocked = i % 10 === 0
  const msg = dnsPacket.encode({
    type: 'response',
    id: i,
    flags: dnsPacket.RECURSION_DESIRED | (blocked ? 3 : 0),
    questions: [{ type: i % 3 === 0 ? 'AAAA' : 'A', name, class: 'IN' }],
    authorities: blocked
      ? [
          {
            type: 'SOA',
            name,
            ttl: 60,
            data: { mname: name, rname: 'nobody.invalid', serial: 1, refresh: 1, retry: 1, expire: 1, minimum: 1 },
          },
        ]
      : [],
  })
  const message = Buffer.concat([
    int(1, 6),
    bytes(4, Buffer.from([10, 0, (i >> 8) & 3, i & 255])),
    int(8, 1_800_000_000),
    bytes(14, msg),
  ])
  const payload = Buffer.concat([bytes(14, message), int(15, 1)])
  const head = Buffer.alloc(4)
  head.writeUInt32BE(payload.length)
  distinct.push(Buffer.concat([head, payload]))
}
const stream = Buffer.concat(Array.from({ length: N }, (_, i) => distinct[(i * 7919) % distinct.length]!))
const CHUNK = 65536

function run(full: boolean): number {
  const decoder = new FrameDecoder()
  const service = new AnalyticsService('aggregate', () => new Date())
  const t0 = performance.now()
  let frames = 0
  for (let at = 0; at < stream.length; at += CHUNK) {
    for (const ev of decoder.push(stream.subarray(at, at + CHUNK))) {
      if (ev.kind !== 'data') continue
      frames++
      if (full) service.ingest(decodeDnstap(ev.payload))
    }
  }
  if (frames !== N) throw new Error(`decoded ${frames} of ${N} frames`)
  return (N / (performance.now() - t0)) * 1000
}

run(true) // warm-up
const base = run(false)
const full = run(true)
console.log(`CPU: ${cpus()[0]?.model}; ${N} frames, ${(stream.length / 1e6).toFixed(0)} MB`)
console.log(`baseline (frame split only): ${Math.round(base).toLocaleString('en')} frames/s`)
console.log(`ingest (split + dnstap + DNS + rankings): ${Math.round(full).toLocaleString('en')} frames/s`)
console.log(`ratio ingest/baseline: ${(full / base).toFixed(2)}x`)
