/**
 * dnsctl benchmarks (npm run bench -w apps/dnsctl), against a real knotd on loopback:
 *
 * 1. Latency of one RRset upsert through the API (HTTP -> validate -> history -> fsync'd file
 *    -> zone transaction on knotd's control socket -> SOA verified -> audit) in zones of 100, 10k
 *    and 100k records, against the baseline `knotc -b zone-reload` of the same zone alone (what
 *    the upsert used to do in its place); the ratio is dnsctl's overhead.
 * 2. Dry-run validation throughput: change batches validated per second (HTTP, 10k-record zone)
 *    and zone text parsed + validated per second in-process (100k-record zone).
 *
 * Bounded: a fixed number of iterations per size; stops by itself.
 */
import { execFile } from 'node:child_process'
import { cpus, loadavg, totalmem } from 'node:os'
import { PassThrough } from 'node:stream'
import { setTimeout as delay } from 'node:timers/promises'
import { promisify } from 'node:util'
import { createLogger, openDatabase } from '@gatehouse/kit'
import { startKnot, tempDir } from '@gatehouse/testkit'
import { loadDnsctlConfig } from '../src/config.ts'
import { migrations } from '../src/db/migrations/index.ts'
import type { DB } from '../src/db/schema.ts'
import { buildServer } from '../src/server.ts'
import { parseZone, validateZone } from '../src/zonefile/index.ts'

const run = promisify(execFile)

function zoneOf(name: string, records: number): string {
  const lines = [
    `$ORIGIN ${name}.`,
    '$TTL 3600',
    '@ SOA ns1 hostmaster 1 3600 900 604800 300',
    '@ NS ns1',
    'ns1 A 192.0.2.1',
  ]
  for (let i = 0; lines.length < records + 2; i++) {
    lines.push(`h${i} 300 A 10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`)
  }
  return `${lines.join('\n')}\n`
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

const settle = () => delay(Number(process.env.DNSCTL_BENCH_SETTLE_MS ?? 200))

const ms = (n: number) => `${n.toFixed(1)} ms`

async function main() {
  const cpu = cpus()
  console.log(
    `machine: ${cpu.length} x ${cpu[0]?.model ?? 'cpu'}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB, load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}, node ${process.version}`,
  )
  const knot = await startKnot()
  const dir = tempDir('dnsctl-bench-')
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
  const base = await dnsctl.app.listen({ port: 0, host: '127.0.0.1' })
  const call = (method: string, path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(base + path, {
      method,
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    })

  try {
    console.log('\n1. one RRset upsert (API, end to end) vs knotc -b zone-reload of the same zone')
    console.log(
      'records   iterations   upsert p50   upsert p95   reload p50   reload p95   overhead (p50 ratio)   dnsctl CPU per upsert',
    )
    for (const [size, iterations] of [
      [100, 40],
      [10_000, 25],
      [100_000, 12],
    ] as const) {
      const zone = `bench${size}.test`
      const created = await call('PUT', `/v1/zones/${zone}`, { role: 'primary', zone_text: zoneOf(zone, size) })
      if (created.status !== 201) throw new Error(`create ${zone}: ${await created.text()}`)
      let revision = ((await created.json()) as { revision: string }).revision
      const upserts: number[] = []
      const reloads: number[] = []
      // CPU of this process (dnsctl and the HTTP client) during the upserts alone.
      let cpuMicros = 0
      for (let i = 0; i < iterations; i++) {
        // knotd frees the previous zone contents in the background after a reload: let it
        // finish so each measured operation starts on an idle server, the upsert and the
        // baseline alike (without this the baseline reload of 100k records varied 90-240 ms).
        await settle()
        const t0 = performance.now()
        const c0 = process.cpuUsage()
        const res = await call(
          'POST',
          `/v1/zones/${zone}/changes`,
          { changes: [{ action: 'upsert', name: 'bench', type: 'A', ttl: 60, records: [`192.0.2.${i % 250}`] }] },
          { 'if-match': `"${revision}"` },
        )
        upserts.push(performance.now() - t0)
        if (res.status !== 200) throw new Error(`upsert: ${await res.text()}`)
        revision = ((await res.json()) as { revision: string }).revision
        const c = process.cpuUsage(c0)
        cpuMicros += c.user + c.system
        await settle()
        const t1 = performance.now()
        await run('/usr/sbin/knotc', ['-s', knot.controlSocket, '-b', 'zone-reload', zone])
        reloads.push(performance.now() - t1)
      }
      const [u50, u95, r50, r95] = [
        percentile(upserts, 50),
        percentile(upserts, 95),
        percentile(reloads, 50),
        percentile(reloads, 95),
      ]
      console.log(
        `${String(size).padStart(7)}   ${String(iterations).padStart(10)}   ${ms(u50).padStart(10)}   ${ms(u95).padStart(10)}   ${ms(r50).padStart(10)}   ${ms(r95).padStart(10)}   ${`${(u50 / r50).toFixed(2)}x`.padStart(20)}   ${ms(cpuMicros / 1000 / iterations).padStart(10)}`,
      )
    }

    console.log('\n2. dry-run validation throughput')
    const zone = 'bench10000.test'
    const state = (await (await fetch(`${base}/v1/zones/${zone}/rrsets`)).json()) as { revision: string }
    let n = 0
    const until = performance.now() + 3000
    while (performance.now() < until) {
      const res = await call(
        'POST',
        `/v1/zones/${zone}/changes`,
        { dry_run: true, changes: [{ action: 'upsert', name: `d${n}`, type: 'TXT', ttl: 60, records: ['"dry run"'] }] },
        { 'if-match': `"${state.revision}"` },
      )
      if (res.status !== 200) throw new Error(await res.text())
      await res.arrayBuffer()
      n++
    }
    console.log(`API dry-run batches on a 10k-record zone: ${(n / 3).toFixed(1)} per second (one client, sequential)`)
    const text = zoneOf('parse.test', 100_000)
    let parses = 0
    const t0 = performance.now()
    while (performance.now() - t0 < 3000) {
      validateZone(parseZone(text, { origin: 'parse.test.' }))
      parses++
    }
    const seconds = (performance.now() - t0) / 1000
    console.log(
      `parse + validate of a 100k-record zone text (${(text.length / 2 ** 20).toFixed(1)} MiB): ${((seconds / parses) * 1000).toFixed(0)} ms each, ${((parses * 100_000) / seconds / 1000).toFixed(0)}k records/s`,
    )
  } finally {
    await dnsctl.close()
    await database.close()
    await knot.stop()
    dir.remove()
  }
}

await main()
