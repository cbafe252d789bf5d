/**
 * `npm run bench:web -w apps/edgegate`: (1) the web candidate report over N signals and N TLS
 * sightings inside its window, p50/p95 against the raw SQL of the same join run on the same
 * driver in the same run; (2) one enforcement controller pass over C candidates: time and
 * decisions written per second. Knobs: EDGEGATE_BENCH_WEB_N (default 200000),
 * EDGEGATE_BENCH_WEB_CANDIDATES (default 20000), EDGEGATE_BENCH_WEB_RUNS (default 20),
 * EDGEGATE_BENCH_DIALECTS (default sqlite,postgres), EDGEGATE_BENCH_WEB_DATA (clients or random, below); EDGEGATE_BENCH_WEB_PROFILE=1 also times the
 * report's parts (join, grouping, decision reads). Figures: docs/performance/edgegate.md.
 */
import { cpus } from 'node:os'
import { type Postgres, startPostgres } from '@gatehouse/testkit'
import { CompiledQuery, sql } from 'kysely'
import { type EdgeDatabase, openEdgeDatabase } from '../src/db/open.ts'
import { runPass } from '../src/enforcement/service.ts'
import { addNode } from '../src/nodes/service.ts'
import { recordSignals } from '../src/signals/store.ts'
import { networkOf } from '../src/web/candidates.ts'
import { correlate, groupedEvidence, groupedEvidenceQuery } from '../src/web/evidence.ts'
import { buildReport } from '../src/web/service.ts'
import { recordTlsSightings } from '../src/web/sightings.ts'
import { matchQuery } from '../src/web/store.ts'
import { newDatabase } from '../test/helpers.ts'

const N = Number(process.env.EDGEGATE_BENCH_WEB_N ?? 200_000)
const CANDIDATES = Number(process.env.EDGEGATE_BENCH_WEB_CANDIDATES ?? 20_000)
const RUNS = Number(process.env.EDGEGATE_BENCH_WEB_RUNS ?? 20)
const DIALECTS = (process.env.EDGEGATE_BENCH_DIALECTS ?? 'sqlite,postgres').split(',') as Array<'sqlite' | 'postgres'>
const MIN = 60_000
const GATES = ['tls-1', 'tls-2', 'tls-3', 'tls-4']

let postgres: Postgres | undefined
const pg = async () => (postgres ??= await startPostgres())

function pct(values: number[], p: number): number {
  const s = [...values].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!
}
const ms = (n: number) => `${n.toFixed(1)} ms`

/** A web signal of node web-1 for shop.example (a scanner's shape unless `extra` says otherwise). */
function signalRow(eventId: string, observedMs: number, ip: string, extra: Record<string, unknown> = {}) {
  return {
    instance_id: 'web-1',
    event_id: eventId,
    observed_ms: observedMs,
    host: 'shop.example',
    site: 'shop',
    ip,
    network: networkOf(ip),
    trigger: 'suspicious_uri',
    connections: 10,
    errors: 6,
    successes: 4,
    window_seconds: 60,
    received_ms: observedMs,
    ...extra,
  }
}

/** Deterministic pseudo-random numbers (mulberry32), so both dialects get the same data. */
function rng(seed: number) {
  let a = seed
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

async function insertRows(d: EdgeDatabase, table: 'signals' | 'web_sightings', rows: Record<string, unknown>[]) {
  // One transaction per 100k rows: loading is set-up, not what is measured.
  for (let j = 0; j < rows.length; j += 100_000) {
    await d.db.transaction().execute(async (trx) => {
      for (let i = j; i < Math.min(j + 100_000, rows.length); i += 2000) {
        await trx
          .insertInto(table)
          .values(rows.slice(i, i + 2000) as never)
          .onConflict((oc) => oc.doNothing())
          .execute()
      }
    })
  }
}

async function seedNodes(d: EdgeDatabase) {
  for (const g of GATES) await addNode(d.db, g, 'tlsgate', { type: 'token' }, 'bench')
  await addNode(d.db, 'web-1', 'websignal', { type: 'token' }, 'bench')
}

/**
 * N TLS sightings and N signals over the 30-minute window, one signal in ten from an address
 * with sightings. EDGEGATE_BENCH_WEB_DATA picks how sightings relate to addresses:
 * - `clients` (default): N/10 client addresses, each with its own TLS fingerprint (one of 2000)
 *   seen at its own gate, about ten sightings each over 35 minutes, as TLS clients behave
 *   (an address keeps its software): a matching signal matches about one candidate.
 * - `random` (the bench of the first round): 20,000 addresses and each sighting's fingerprint
 *   and gate drawn independently, so an address shows ~N/70,000 fingerprints in any ten
 *   minutes and matches grow with N²: 56k at 200k, ~1.4M at 1M.
 */
const DATA = process.env.EDGEGATE_BENCH_WEB_DATA ?? 'clients'
async function reportData(d: EdgeDatabase, now: number) {
  const r = rng(42)
  const ip = (i: number) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`
  const addresses = DATA === 'random' ? 20_000 : Math.max(1, Math.floor(N / 10))
  const fpOf = Array.from({ length: addresses }, () => Math.floor(r() * 2000))
  const gateOf = Array.from({ length: addresses }, () => Math.floor(r() * 4))
  const sightings = Array.from({ length: N }, (_, i) => {
    const a = Math.floor(r() * addresses)
    return {
      instance_id: DATA === 'random' ? GATES[i % 4] : GATES[gateOf[a]!],
      fingerprint: `t13d_${DATA === 'random' ? Math.floor(r() * 2000) : fpOf[a]}`,
      ip: ip(a),
      port: 1024 + (i % 60_000),
      host: 'shop.example',
      seen_ms: now - Math.floor(r() * 35 * MIN),
    }
  })
  const signals = Array.from({ length: N }, (_, i) =>
    signalRow(
      `b${i}`,
      now - Math.floor(r() * 30 * MIN),
      r() < 0.1 ? ip(Math.floor(r() * addresses)) : ip(8_000_000 + Math.floor(r() * 4_000_000)),
      { site: `site${i % 7}` },
    ),
  )
  await insertRows(d, 'web_sightings', sightings)
  await insertRows(d, 'signals', signals)
  // Loaded in bulk, bypassing ingest: correlate them the way migration 0005 does.
  const t = performance.now()
  await correlate(d.db, sql`1 = 1`)
  console.log(`  correlated the loaded rows (the migration's backfill) in ${ms(performance.now() - t)}`)
}

/**
 * What correlating at ingest costs: 200 TLS gate pages (16 fingerprints × 4 sightings, addresses
 * from the data's pool, so they find signals) through `recordTlsSightings`, and 200 signal
 * batches of 50 (one in ten from the pool) through `recordSignals`, each against the same rows
 * inserted in a transaction without correlation, into the loaded database.
 */
async function benchIngestCost(d: EdgeDatabase, dialect: string, now: number) {
  const r = rng(7)
  const addresses = DATA === 'random' ? 20_000 : Math.max(1, Math.floor(N / 10))
  const ip = (i: number) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`
  const page = (k: number) =>
    Array.from({ length: 16 }, (_, j) => {
      const sightings = Array.from({ length: 4 }, () => ({
        ip: ip(Math.floor(r() * addresses)),
        port: 1024 + Math.floor(r() * 60_000),
        last_seen_ms: now - Math.floor(r() * MIN),
      }))
      return {
        fingerprint: `t13d_ingest_${k}_${j}`,
        reported_status: 'unknown' as const,
        first_seen_ms: now - MIN,
        last_seen_ms: now,
        count: 4,
        ips: sightings.map((x) => x.ip),
        ports: sightings.map((x) => x.port),
        sightings,
        metadata: { sni: 'shop.example' },
      }
    })
  const batch = (k: number) =>
    Array.from({ length: 50 }, (_, j) =>
      signalRow(
        `ingest-${k}-${j}`,
        now - Math.floor(r() * MIN),
        r() < 0.1 ? ip(Math.floor(r() * addresses)) : ip(8_000_000 + Math.floor(r() * 4_000_000)),
      ),
    )
  const plain = async (table: 'web_sightings' | 'signals', rows: Record<string, unknown>[]) =>
    d.db.transaction().execute((trx) =>
      trx
        .insertInto(table)
        .values(rows as never)
        .onConflict((oc) => oc.doNothing())
        .execute(),
    )
  const time = async (fn: (k: number) => Promise<unknown>) => {
    const t = performance.now()
    for (let k = 0; k < 200; k++) await fn(k)
    return performance.now() - t
  }
  const tlsCorrelated = await time((k) => recordTlsSightings(d.db, d.kind, 'tls-1', page(k)))
  const tlsPlain = await time((k) =>
    plain(
      'web_sightings',
      page(1000 + k).flatMap((a) =>
        a.sightings.map((x) => ({
          instance_id: 'tls-1',
          fingerprint: a.fingerprint,
          ip: x.ip,
          port: x.port,
          host: 'shop.example',
          seen_ms: x.last_seen_ms,
        })),
      ),
    ),
  )
  const sigCorrelated = await time((k) => recordSignals(d.db, d.kind, 'web-1', batch(k)))
  const sigPlain = await time((k) => plain('signals', batch(1000 + k)))
  const us = (total: number, rows: number) => `${((total * 1000) / rows).toFixed(0)} µs`
  console.log(
    `  ${dialect}: ingest with correlation: TLS sightings ${us(tlsCorrelated, 200 * 64)}/sighting against ${us(tlsPlain, 200 * 64)} plain (×${(tlsCorrelated / tlsPlain).toFixed(2)}); signals ${us(sigCorrelated, 200 * 50)}/signal against ${us(sigPlain, 200 * 50)} plain (×${(sigCorrelated / sigPlain).toFixed(2)})`,
  )
}

async function benchReport(dialect: 'sqlite' | 'postgres') {
  const d = await openEdgeDatabase(await newDatabase(dialect, pg), 4)
  try {
    const now = Date.now()
    await seedNodes(d)
    let t = performance.now()
    await reportData(d, now)
    console.log(`  ${dialect}: loaded ${N} signals + ${N} sightings in ${ms(performance.now() - t)}`)
    // PostgreSQL: also set the visibility map, as autovacuum does after a bulk load, so the
    // report can read the evidence index without visiting the table (an index-only scan).
    await d.db.executeQuery(CompiledQuery.raw(dialect === 'postgres' ? 'vacuum analyze' : 'analyze'))
    const interval = { fromMs: now - 30 * MIN, toMs: now, windowMs: 30 * MIN }
    const policy = {
      enabled: true,
      minNetworks: 2,
      minSignals: 5,
      minErrorRatio: 0.5,
      requireMultiScope: true,
      proposedTtlMs: 60 * MIN,
    }
    const compiled = matchQuery(interval.fromMs, interval.toMs).compile(d.db)
    const raw =
      dialect === 'sqlite'
        ? (() => {
            const stmt = d.sqlite!.prepare(compiled.sql)
            return async () => stmt.all(...(compiled.parameters as number[])).length
          })()
        : async () => (await d.db.executeQuery(compiled)).rows.length
    // The report's aggregating SQL alone (through Kysely and the driver, lists parsed).
    const rawEvidence = async () => (await groupedEvidence(d.db, d.kind, interval.fromMs, interval.toMs)).length
    const report: number[] = []
    const baseline: number[] = []
    const evidenceRead: number[] = []
    const reportCpu: number[] = []
    if (process.env.EDGEGATE_BENCH_WEB_PROFILE) {
      const { candidatesOf } = await import('../src/web/candidates.ts')
      const { decisionsFor } = await import('../src/decisions/store.ts')
      // The report's plan: SQLite's EXPLAIN QUERY PLAN, PostgreSQL's EXPLAIN ANALYZE.
      const q = groupedEvidenceQuery(d.kind, interval.fromMs, interval.toMs).compile(d.db)
      const explain = dialect === 'sqlite' ? 'explain query plan ' : 'explain (analyze, buffers) '
      const plan = await d.db.executeQuery<Record<string, string>>(
        CompiledQuery.raw(explain + q.sql, [...q.parameters]),
      )
      console.log(`  ${dialect} report plan:\n${plan.rows.map((r) => `    ${r.detail ?? r['QUERY PLAN']}`).join('\n')}`)
      for (let i = 0; i < 3; i++) {
        let s0 = performance.now()
        const rows = await groupedEvidence(d.db, d.kind, interval.fromMs, interval.toMs)
        const a = performance.now() - s0
        s0 = performance.now()
        const g = candidatesOf(rows)
        const b = performance.now() - s0
        s0 = performance.now()
        await decisionsFor(d.db, g.slice(0, 5000))
        console.log('  profile: grouped read', ms(a), 'candidates', ms(b), 'decisions', ms(performance.now() - s0))
      }
    }
    let candidates = 0
    let matches = 0
    // Interleaved, one warm-up round each.
    for (let i = 0; i <= RUNS; i++) {
      t = performance.now()
      const c0 = process.cpuUsage()
      const rep = await buildReport(d.db, d.kind, interval, policy, now)
      const c1 = process.cpuUsage(c0)
      if (i > 0) reportCpu.push((c1.user + c1.system) / 1000)
      if (i > 0) report.push(performance.now() - t)
      candidates = rep.candidates.length
      t = performance.now()
      matches = await raw()
      if (i > 0) baseline.push(performance.now() - t)
      t = performance.now()
      await rawEvidence()
      if (i > 0) evidenceRead.push(performance.now() - t)
    }
    console.log(
      `  ${dialect}: report p50 ${ms(pct(report, 50))}, p95 ${ms(pct(report, 95))}; raw join p50 ${ms(pct(baseline, 50))}, p95 ${ms(pct(baseline, 95))}; ratio p95 ${(pct(report, 95) / pct(baseline, 95)).toFixed(2)} (${matches} matches, ${candidates} candidates)`,
    )
    console.log(
      `  ${dialect}: report CPU (this process) p50 ${ms(pct(reportCpu, 50))}, p95 ${ms(pct(reportCpu, 95))}; the report's grouping SQL alone p50 ${ms(pct(evidenceRead, 50))}, p95 ${ms(pct(evidenceRead, 95))}; report / that read p95 ${(pct(report, 95) / pct(evidenceRead, 95)).toFixed(2)}`,
    )
    await benchIngestCost(d, dialect, now)
  } finally {
    await d.close()
  }
}

async function benchPass(dialect: 'sqlite' | 'postgres') {
  const d = await openEdgeDatabase(await newDatabase(dialect, pg), 4)
  try {
    const now = Date.now()
    await seedNodes(d)
    const ip = (i: number) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`
    await insertRows(
      d,
      'web_sightings',
      Array.from({ length: CANDIDATES }, (_, i) => ({
        instance_id: GATES[i % 4],
        fingerprint: `t13d_${i}`,
        ip: ip(i),
        port: 443,
        host: 'shop.example',
        seen_ms: now - MIN,
      })),
    )
    await insertRows(
      d,
      'signals',
      Array.from({ length: CANDIDATES }, (_, i) =>
        signalRow(`p${i}`, now - MIN, ip(i), { connections: 10, errors: 9, successes: 1 }),
      ),
    )
    await correlate(d.db, sql`1 = 1`)
    const settings = {
      mode: 'enforce' as const,
      canaryNodes: [],
      windowMs: 15 * MIN,
      policy: {
        enabled: true,
        minNetworks: 1,
        minSignals: 1,
        minErrorRatio: 0.5,
        requireMultiScope: false,
        proposedTtlMs: 60 * MIN,
      },
    }
    // Signal ingest alone, then during the first pass: batches of 50 new signals, one after
    // another, each timed (the pass must not hold the write lock for its whole length).
    let batchNo = 0
    const ingestBatch = async () => {
      const b = batchNo++
      const rows = Array.from({ length: 50 }, (_, i) =>
        signalRow(`i${b}-${i}`, now, `172.16.${b & 255}.${i}`, { connections: 1, errors: 1, successes: 0 }),
      )
      const t0 = performance.now()
      await recordSignals(d.db, d.kind, 'web-1', rows)
      return performance.now() - t0
    }
    const alone: number[] = []
    for (let i = 0; i < 100; i++) alone.push(await ingestBatch())
    const during: number[] = []
    let passing = true
    const ingest = (async () => {
      while (passing) during.push(await ingestBatch())
    })()
    let t = performance.now()
    const first = await runPass(d.db, d.kind, settings, now).finally(() => {
      passing = false
    })
    const pass = performance.now() - t
    await ingest
    console.log(
      `  ${dialect}: signal ingest (batches of 50) alone p50 ${ms(pct(alone, 50))}, max ${ms(Math.max(...alone))}; during the pass ${during.length} batches (${Math.round((during.length * 50) / (pass / 1000))} signals/s), p50 ${ms(pct(during, 50))}, p99 ${ms(pct(during, 99))}, max ${ms(Math.max(...during))}`,
    )
    t = performance.now()
    const idle = await runPass(d.db, d.kind, settings, now + 1000)
    const again = performance.now() - t
    t = performance.now()
    const expire = await runPass(d.db, d.kind, settings, now + 61 * MIN)
    const revoke = performance.now() - t
    console.log(
      `  ${dialect}: pass over ${CANDIDATES} candidates: ${ms(pass)}, ${first.blocked} blocks (${Math.round(first.blocked / (pass / 1000))}/s); unchanged pass ${ms(again)} (${idle.blocked + idle.renewed} writes); expiry pass ${ms(revoke)}, ${expire.revoked} revoked (${Math.round(expire.revoked / (revoke / 1000))}/s)`,
    )
  } finally {
    await d.close()
  }
}

console.log(`edgegate web bench on ${cpus()[0]?.model ?? 'unknown CPU'} (${cpus().length} cores)`)
try {
  for (const dialect of DIALECTS) {
    await benchReport(dialect)
    await benchPass(dialect)
  }
} finally {
  await postgres?.stop()
}
