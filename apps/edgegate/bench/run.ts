/**
 * `npm run bench -w apps/edgegate`: observation ingest (pages of 16 from many simulated
 * gates, over HTTPS) and policy pulls against 100k stored decisions (full and incremental),
 * on SQLite and PostgreSQL, each against the raw SQL the store issues, executed directly
 * on the same driver with the same concurrency. Loopback only; stops by itself.
 */
import { cpus, totalmem } from 'node:os'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { createTlsAgent, requestNoRedirect } from '@gatehouse/kit'
import { serverPrepared } from '@gatehouse/kit/db/pg-prepared.ts'
import { metric, type Postgres, startPostgres } from '@gatehouse/testkit'
import { CompiledQuery } from 'kysely'
import { openEdgeDatabase } from '../src/db/open.ts'
import {
  ALL_COLUMNS,
  COLUMNS,
  mergeBatch,
  PG_INSERT,
  PG_LOCK,
  PG_UPSERT,
  pgColumns,
  pgInsert,
  sqliteStatements,
} from '../src/observations/group-merge.ts'
import { normalizeObservation, toRow } from '../src/observations/merge.ts'
import { makeTls, newDatabase, seed, startEdgegate } from '../test/helpers.ts'

const GATES = 32
/** Pages each simulated gate uploads per round: 160 make a round of 81,920 observations (2–4 s). */
const PAGES_PER_GATE = Number(process.env.EDGEGATE_BENCH_PAGES_PER_GATE ?? 160)
const PAGE = 16
const DECISIONS = 100_000
const PULLS = 1000
/** Rows per statement of the ingest floor: 64 pages, the most the server's group commit takes. */
const FLOOR_ROWS = 64 * PAGE
// Knobs for iterating (the defaults run everything, as reported in docs/performance/edgegate.md):
// EDGEGATE_BENCH_DIALECTS=sqlite,postgres  EDGEGATE_BENCH_PARTS=ingest,full,pulls  EDGEGATE_BENCH_ROUNDS=3
// EDGEGATE_BENCH_PAGES_PER_GATE=160 (40 until 2026-11-29: rounds of half a second swung too much)
// EDGEGATE_BENCH_BUSY_PULLS=1000 (pulls timed during ingest; 250 until 2026-12-04, where the p99
// was the third-slowest pull and moved 26-39 ms between runs of the same code)
const BUSY_PULLS = Number(process.env.EDGEGATE_BENCH_BUSY_PULLS ?? PULLS)
const ROUNDS = Number(process.env.EDGEGATE_BENCH_ROUNDS ?? 3)
const DIALECT_LIST = (process.env.EDGEGATE_BENCH_DIALECTS ?? 'sqlite,postgres').split(',')
const PARTS = new Set((process.env.EDGEGATE_BENCH_PARTS ?? 'ingest,full,pulls').split(','))

const tls = makeTls()
let postgres: Postgres | undefined
const pg = async () => (postgres ??= await startPostgres())

function pct(values: number[], p: number): number {
  const s = [...values].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!
}
const ms = (n: number) => `${n.toFixed(2)} ms`

function page(gate: number, n: number, round: number, epoch = 0) {
  const t = new Date(Date.now() - 60_000 + round * 1000).toISOString()
  return Array.from({ length: PAGE }, (_, i) => {
    const ip = `10.${gate}.${n % 256}.${i + 1}`
    return {
      fingerprint:
        `${epoch.toString(16)}${gate.toString(16).padStart(4, '0')}${n.toString(16).padStart(6, '0')}${i.toString(16).padStart(2, '0')}`.padEnd(
          32,
          '0',
        ),
      status: 'unknown' as const,
      first_seen: t,
      last_seen: t,
      ips: [ip, `192.0.2.${i + 1}`],
      ports: [22],
      sightings: [0, 1, 2, 3].map((k) => ({ ip, port: 40000 + k + round * 4, last_seen: t })),
      count: round + 1,
      metadata: { kex_algorithms: 'curve25519-sha256,ecdh-sha2-nistp256', first_kex_packet_follows: 'false' },
    }
  })
}

/** Run `work(i)` for i in [0, n) with `concurrency` workers; returns elapsed ms. */
async function pool(n: number, concurrency: number, work: (i: number) => Promise<void>): Promise<number> {
  let next = 0
  const start = performance.now()
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) await work(next++)
    }),
  )
  return performance.now() - start
}

/**
 * The statements `mergeBatch` issues for one page, with their values ready, as the baseline runs
 * them in one transaction: PostgreSQL's group statements (prepared, each column or key list one
 * joined text, in key order), SQLite's one-row statements in one synchronous transaction.
 */
function compilePage(direct: Direct, instance: string, obs: ReturnType<typeof page>) {
  const rows = obs.map((o, i) => toRow(instance, normalizeObservation(o, i, 0), Date.now()))
  const { transactionSync } = direct
  if (transactionSync) {
    const s = sqliteStatements(direct)
    // Reads first, as the store: new ones are not found and inserted, stored ones written back.
    return {
      fresh: () =>
        transactionSync((tx) => {
          for (const r of rows) {
            tx.first(s.read, r.instance_id, r.fingerprint)
            tx.run(s.insert, ...ALL_COLUMNS.map((c) => r[c] ?? null))
          }
        }),
      merge: () =>
        transactionSync((tx) => {
          for (const r of rows) {
            tx.first(s.read, r.instance_id, r.fingerprint)
            tx.run(s.update, ...COLUMNS.map((c) => r[c] ?? null), r.instance_id, r.fingerprint)
          }
        }),
    }
  }
  const sorted = [...rows].sort((a, b) => (a.fingerprint < b.fingerprint ? -1 : 1))
  const joined = (values: string[]) => values.map((v) => `\u0001${v}`).join('')
  const read = CompiledQuery.raw(PG_LOCK, [
    joined(sorted.map((r) => r.instance_id)),
    joined(sorted.map((r) => r.fingerprint)),
  ])
  const columns = pgColumns(sorted)!
  const run = (queries: CompiledQuery[]) => () =>
    direct.db.transaction().execute(async (trx) => {
      for (const q of queries) await trx.executeQuery(q)
    })
  // Reads (locks) first: new ones are not found and inserted, stored ones written back.
  return {
    fresh: run([read, CompiledQuery.raw(PG_INSERT, columns)]),
    merge: run([read, CompiledQuery.raw(PG_UPSERT, columns)]),
  }
}

async function benchDialect(dialect: 'sqlite' | 'postgres') {
  const url = await newDatabase(dialect, pg)
  const gates = Array.from({ length: GATES }, (_, i) => ({ id: `gate-${i}`, kind: 'sshgate' }))
  // TLS gates for the busy-fingerprint part (their sightings also feed the web candidate report).
  const tlsGates = Array.from({ length: GATES }, (_, i) => ({ id: `tls-${i}`, kind: 'tlsgate' }))
  const { tokens } = await seed(url, [...gates, ...tlsGates, { id: 'bench-1', kind: 'sshgate' }])
  const server = await startEdgegate(url, tls, ['--log-level', 'error'])
  const agent = createTlsAgent({ ca: tls.ca.ca })
  // As the server opens it (serve: SQLite checkpoints in the background), so the floor runs on the same settings.
  const direct = await openEdgeDatabase(url, GATES, { backgroundCheckpoints: true })
  const out: Record<string, string> = {}
  try {
    // --- Observation ingest over HTTPS -------------------------------------------------
    if (PARTS.has('ingest')) await benchIngest(out, server, tokens, agent, direct)
    if (PARTS.has('full')) await benchFullSets(out, server, tokens, agent, direct)
    if (PARTS.has('pulls')) await benchPulls(out, server, tokens, agent, direct)
  } finally {
    await direct.close()
    await agent.close()
    await server.stop()
  }
  return out
}

type Agent = ReturnType<typeof createTlsAgent>
type Server = Awaited<ReturnType<typeof startEdgegate>>
type Direct = Awaited<ReturnType<typeof openEdgeDatabase>>

async function benchIngest(
  out: Record<string, string>,
  server: Server,
  tokens: Record<string, string>,
  agent: Agent,
  direct: Direct,
) {
  {
    const total = GATES * PAGES_PER_GATE
    // The simulated gates: each request's body is built before the clock starts (real
    // gates serialise their pages on their own machines, not on the server's two cores),
    // and sent through undici's dispatcher directly on kept-alive connections.
    const origin = new URL(server.base).origin
    const post = (round: number, epoch: number) => {
      const requests = Array.from({ length: total }, (_, i) => {
        const gate = i % GATES
        const id = `gate-${gate}`
        return {
          origin,
          path: `/v1/observations/batch?instance_id=${id}`,
          method: 'POST' as const,
          headers: { authorization: `Bearer ${tokens[id]}`, 'content-type': 'application/json' },
          body: JSON.stringify({ instance_id: id, observations: page(gate, Math.floor(i / GATES), round, epoch) }),
        }
      })
      return async (i: number) => {
        const res = await agent.request(requests[i]!)
        const text = await res.body.text()
        if (res.statusCode !== 200 || text !== `{"accepted":${PAGE}}`) {
          throw new Error(`ingest answered ${res.statusCode} ${text.slice(0, 200)}`)
        }
      }
    }
    // Each figure is the best of ROUNDS (the machine is shared); new fingerprints every round.
    const best = {
      newMs: Infinity,
      mergeMs: Infinity,
      baseMs: Infinity,
      baseMergeMs: Infinity,
      serviceMs: Infinity,
      floorMs: Infinity,
      valuesFloorMs: Infinity,
      cpuPerObs: Infinity,
      cpuPerMergeObs: Infinity,
      dbCpuPerObs: Infinity,
      dbCpuPerMergeObs: Infinity,
    }
    // PostgreSQL: the whole database server's CPU (every backend) around each HTTPS round.
    const dbCpu = () => (direct.kind === 'postgres' ? postgres!.cpuSeconds() : 0)
    // Pages per group-commit transaction in each round (new / merge), from the server's histogram.
    const groupShapes: string[] = []
    // The load generator's own CPU (this process) per observation, over both HTTPS rounds.
    const generated = { cpuUs: 0, obs: 0 }
    const timed = async (work: (i: number) => Promise<void>) => {
      const g = process.cpuUsage()
      const ms = await pool(total, GATES, work)
      const used = process.cpuUsage(g)
      generated.cpuUs += used.user + used.system
      generated.obs += total * PAGE
      return ms
    }
    for (let r = 0; r < ROUNDS; r++) {
      const cpu0 = await serverMetrics(server.base, agent)
      const db0 = dbCpu()
      best.newMs = Math.min(best.newMs, await timed(post(0, r + 1)))
      const cpu1 = await serverMetrics(server.base, agent)
      const db1 = dbCpu()
      best.cpuPerObs = Math.min(best.cpuPerObs, (cpu1.cpu - cpu0.cpu) / (total * PAGE))
      best.dbCpuPerObs = Math.min(best.dbCpuPerObs, (db1 - db0) / (total * PAGE))
      best.mergeMs = Math.min(best.mergeMs, await timed(post(r + 1, 1)))
      const cpu2 = await serverMetrics(server.base, agent)
      best.cpuPerMergeObs = Math.min(best.cpuPerMergeObs, (cpu2.cpu - cpu1.cpu) / (total * PAGE))
      best.dbCpuPerMergeObs = Math.min(best.dbCpuPerMergeObs, (dbCpu() - db1) / (total * PAGE))
      groupShapes.push(`${pagesPerGroup(cpu0, cpu1).toFixed(1)} / ${pagesPerGroup(cpu1, cpu2).toFixed(1)}`)
      // Baseline: the same statements on the same driver, no HTTP, no validation, no merge.
      const compiled = Array.from({ length: total }, (_, i) =>
        compilePage(direct, `base-${i % GATES}`, page(i % GATES, Math.floor(i / GATES), 0, r + 1)),
      )
      const runBaseline = (which: 'fresh' | 'merge') => pool(total, GATES, async (i) => compiled[i]![which]())
      best.baseMs = Math.min(best.baseMs, await runBaseline('fresh'))
      best.baseMergeMs = Math.min(best.baseMergeMs, await runBaseline('merge'))
      // The service layer in-process (normalise + merge + the same SQL), no HTTP or TLS.
      best.serviceMs = Math.min(
        best.serviceMs,
        await pool(total, GATES, async (i) => {
          const gate = i % GATES
          const aggregates = page(gate, Math.floor(i / GATES), 0, r + 1).map((o, k) => normalizeObservation(o, k, 0))
          await mergeBatch(direct, `svc-${gate}`, aggregates, 0, Date.now())
        }),
      )
      // The floor: the same rows (as the store encodes them) in bare INSERTs, FLOOR_ROWS rows
      // to a transaction, one after another, compiled beforehand: what the database itself
      // takes, with no HTTP, validation, merge or conflict handling. Each database in the
      // fastest form measured (2026-11-29): on PostgreSQL one prepared statement taking each
      // column as one joined text (as the store sends a group), on SQLite a prepared one-row
      // insert run for each row. Until 2026-11-29 the floor was one multi-row VALUES statement
      // (a placeholder per value), which PostgreSQL parsed and planned for each 1,024 rows at a
      // third of the rate: still measured and printed beside it.
      const floorRows = (prefix: string) =>
        Array.from({ length: total }, (_, i) =>
          page(i % GATES, Math.floor(i / GATES), 0, r + 1).map((o, k) =>
            toRow(`${prefix}-${i % GATES}`, normalizeObservation(o, k, 0), Date.now()),
          ),
        ).flat()
      const chunks = <T>(rows: T[]) =>
        Array.from({ length: Math.ceil(rows.length / FLOOR_ROWS) }, (_, j) =>
          rows.slice(j * FLOOR_ROWS, (j + 1) * FLOOR_ROWS),
        )
      const valuesFloor = async () => {
        const inserts = chunks(floorRows('floorv')).map((rows) =>
          direct.db.insertInto('fingerprints').values(rows).compile(),
        )
        const f0 = performance.now()
        for (const q of inserts) await direct.db.transaction().execute((trx) => trx.executeQuery(q))
        best.valuesFloorMs = Math.min(best.valuesFloorMs, performance.now() - f0)
      }
      const fastestFloor = async () => {
        const batches = chunks(floorRows('floor'))
        let f0: number
        if (direct.kind === 'postgres') {
          const text = serverPrepared(pgInsert())
          const inserts = batches.map((rows) => CompiledQuery.raw(text, pgColumns(rows)!))
          f0 = performance.now()
          for (const q of inserts) await direct.db.transaction().execute((trx) => trx.executeQuery(q))
        } else {
          const raw = direct.sqlite!
          const insert = raw.prepare(
            `insert into "fingerprints" (${ALL_COLUMNS.map((c) => `"${c}"`).join(', ')}) values (${ALL_COLUMNS.map(() => '?').join(', ')})`,
          )
          f0 = performance.now()
          for (const rows of batches) {
            raw.exec('begin immediate')
            for (const w of rows) {
              insert.run(
                w.instance_id,
                w.fingerprint,
                w.reported_status,
                w.first_seen_ms,
                w.last_seen_ms,
                w.count,
                w.ips,
                w.ports,
                w.sightings,
                w.oldest_sighting_ms ?? null,
                w.metadata,
                w.updated_ms,
              )
            }
            raw.exec('commit')
          }
        }
        best.floorMs = Math.min(best.floorMs, performance.now() - f0)
      }
      // Alternately first: each leaves the table 1,280 pages' rows larger for the other.
      if (r % 2 === 0) await fastestFloor().then(valuesFloor)
      else await valuesFloor().then(fastestFloor)
    }
    const obs = total * PAGE
    const rate = (t: number) => (obs / t) * 1000
    out['ingest new fingerprints over HTTPS'] =
      `${rate(best.newMs).toFixed(0)} obs/s (${total} pages of ${PAGE} from ${GATES} gates in ${(best.newMs / 1000).toFixed(2)} s)`
    out['ingest server CPU per observation'] =
      `${(best.cpuPerObs * 1e6).toFixed(0)} µs (${(1 / best.cpuPerObs).toFixed(0)} obs per server CPU-second)`
    if (direct.kind === 'postgres')
      out['ingest PostgreSQL CPU per observation (new / merge)'] =
        `${(best.dbCpuPerObs * 1e6).toFixed(0)} / ${(best.dbCpuPerMergeObs * 1e6).toFixed(0)} µs (the whole database server; each the least of the rounds)`
    out['ingest merge into existing over HTTPS'] = `${rate(best.mergeMs).toFixed(0)} obs/s`
    out['ingest server CPU per observation (merge)'] =
      `${(best.cpuPerMergeObs * 1e6).toFixed(0)} µs (${(1 / best.cpuPerMergeObs).toFixed(0)} obs per server CPU-second)`
    out['ingest load generator CPU per observation'] =
      `${(generated.cpuUs / generated.obs).toFixed(0)} µs (mean over the HTTPS rounds; it shares the machine's cores)`
    out['ingest pages per transaction, each round (new / merge)'] = groupShapes.join(', ')
    out['ingest service layer in-process (no HTTP)'] = `${rate(best.serviceMs).toFixed(0)} obs/s`
    out['ingest raw SQL baseline (new / merge)'] =
      `${rate(best.baseMs).toFixed(0)} / ${rate(best.baseMergeMs).toFixed(0)} obs/s`
    out['ingest floor: bare batched INSERT of the same rows'] =
      `${rate(best.floorMs).toFixed(0)} rows/s (${FLOOR_ROWS} rows per transaction, ${direct.kind === 'postgres' ? 'one prepared statement of joined columns' : 'a prepared one-row insert for each'})`
    out['ingest ratio HTTPS / floor (new / merge)'] =
      `${(rate(best.newMs) / rate(best.floorMs)).toFixed(2)} / ${(rate(best.mergeMs) / rate(best.floorMs)).toFixed(2)}`
    out['ingest floor as measured before 2026-11-29: one multi-row VALUES statement'] =
      `${rate(best.valuesFloorMs).toFixed(0)} rows/s, ratio HTTPS / it (new / merge) ${(rate(best.newMs) / rate(best.valuesFloorMs)).toFixed(2)} / ${(rate(best.mergeMs) / rate(best.valuesFloorMs)).toFixed(2)}`
    out['ingest ratio HTTPS / raw SQL (new / merge)'] =
      `${(rate(best.newMs) / rate(best.baseMs)).toFixed(2)} / ${(rate(best.mergeMs) / rate(best.baseMergeMs)).toFixed(2)}`
  }
}

/**
 * One page of a gate in the steady state: every fingerprint already holds the 128 sightings the
 * spec keeps (each connection adds an IP/port pair, so any fingerprint seen 128 times does), and
 * the gate uploads the entry whole, as `toObservation` does: its 128 newest sightings, newest
 * first, of which `NEW_PER_UPLOAD` arrived since the previous upload, and its 128 addresses.
 * Upload `u` carries sightings j = 4u .. 4u + 127 (port 20000 + j, j seconds after `t0`).
 */
const NEW_PER_UPLOAD = 4
function fullPage(gate: number, n: number, upload: number, t0: number, tls: boolean) {
  const time = (j: number) => new Date(t0 + j * 1000).toISOString()
  const top = NEW_PER_UPLOAD * upload + 127
  // A busy fingerprint's address set is full too: 128 addresses, in the kit's order, as gates keep it.
  const ips = Array.from({ length: 128 }, (_, k) => `10.${gate}.${k}.${(n % 254) + 1}`)
  return Array.from({ length: PAGE }, (_, i) => ({
    // Padded with 'e', where page() pads with '0': the pulls part's pages (epoch 15, also an
    // 'f' first) must not merge into these busy fingerprints, or its uploads cost what these do.
    fingerprint:
      `f${gate.toString(16).padStart(4, '0')}${n.toString(16).padStart(6, '0')}${i.toString(16).padStart(2, '0')}`.padEnd(
        32,
        'e',
      ),
    status: 'unknown' as const,
    first_seen: time(0),
    last_seen: time(top),
    ips,
    ports: [22],
    sightings: Array.from({ length: 128 }, (_, k) => ({
      ip: ips[(top - k) % 128]!,
      port: 20000 + top - k,
      last_seen: time(top - k),
    })),
    count: top + 1,
    metadata: tls
      ? { sni: `site-${gate}.example.com`, ja4: 't13d1516h2_8daaf6152771_02713d6af862' }
      : { kex_algorithms: 'curve25519-sha256,ecdh-sha2-nistp256', first_kex_packet_follows: 'false' },
  }))
}

/** Ingest in the steady state (see fullPage): what a busy deployment's uploads cost the server. */
async function benchFullSets(
  out: Record<string, string>,
  server: Server,
  tokens: Record<string, string>,
  agent: Agent,
  direct: Direct,
) {
  for (const tls of [false, true]) await benchFullSetsOf(tls, out, server, tokens, agent, direct)
}

async function benchFullSetsOf(
  tls: boolean,
  out: Record<string, string>,
  server: Server,
  tokens: Record<string, string>,
  agent: Agent,
  direct: Direct,
) {
  const dbCpu = () => (direct.kind === 'postgres' ? postgres!.cpuSeconds() : 0)
  const pagesPerGate = Math.max(1, Math.floor(PAGES_PER_GATE / 8))
  const total = GATES * pagesPerGate
  const origin = new URL(server.base).origin
  const t0 = Date.now() - 3_600_000
  const post = (upload: number) => {
    const requests = Array.from({ length: total }, (_, i) => {
      const gate = i % GATES
      const id = `${tls ? 'tls' : 'gate'}-${gate}`
      return {
        origin,
        path: `/v1/observations/batch?instance_id=${id}`,
        method: 'POST' as const,
        headers: { authorization: `Bearer ${tokens[id]}`, 'content-type': 'application/json' },
        body: JSON.stringify({ instance_id: id, observations: fullPage(gate, Math.floor(i / GATES), upload, t0, tls) }),
      }
    })
    return async (i: number) => {
      const res = await agent.request(requests[i]!)
      const text = await res.body.text()
      if (res.statusCode !== 200 || text !== `{"accepted":${PAGE}}`)
        throw new Error(`ingest answered ${res.statusCode} ${text.slice(0, 200)}`)
    }
  }
  // Upload 0 fills the fingerprints; each later one is timed.
  await pool(total, GATES, post(0))
  let bestMs = Infinity
  let bestCpu = Infinity
  let bestDbCpu = Infinity
  for (let u = 1; u <= ROUNDS; u++) {
    const work = post(u)
    const cpu0 = await serverMetrics(server.base, agent)
    const db0 = dbCpu()
    bestMs = Math.min(bestMs, await pool(total, GATES, work))
    const cpu1 = await serverMetrics(server.base, agent)
    bestCpu = Math.min(bestCpu, (cpu1.cpu - cpu0.cpu) / (total * PAGE))
    bestDbCpu = Math.min(bestDbCpu, (dbCpu() - db0) / (total * PAGE))
  }
  const obs = total * PAGE
  const db = direct.kind === 'postgres' ? ` + PostgreSQL ${(bestDbCpu * 1e6).toFixed(0)} µs` : ''
  out[
    `ingest from ${tls ? 'TLS' : 'SSH'} gates, fingerprints holding 128 sightings, uploads of 128 (${NEW_PER_UPLOAD} new)`
  ] =
    `${((obs / bestMs) * 1000).toFixed(0)} obs/s (${total} pages of ${PAGE}), server CPU ${(bestCpu * 1e6).toFixed(0)} µs${db} per observation`
}

async function benchPulls(
  out: Record<string, string>,
  server: Server,
  tokens: Record<string, string>,
  agent: Agent,
  direct: Direct,
) {
  {
    // --- Policy pulls against 100k decisions -------------------------------------------
    const startUs = Date.now() * 1000 - DECISIONS
    for (let i = 0; i < DECISIONS; i += 1000) {
      await direct.db
        .insertInto('decisions')
        .values(
          Array.from({ length: 1000 }, (_, k) => ({
            scope_type: 'instance',
            scope_id: 'bench-1',
            fingerprint: (i + k).toString(16).padStart(32, '0'),
            status: (['approved', 'blocked', 'pending'] as const)[(i + k) % 3]!,
            label: `label ${i + k}`,
            updated_us: startUs + i + k,
            actor: 'admin:bench',
            source: 'manual',
            expires_ms: null,
            evidence: null,
          })),
        )
        .execute()
    }
    await direct.db
      .updateTable('decision_clock')
      .set({ last_us: startUs + DECISIONS })
      .execute()
    const pull = async (since: number | undefined) => {
      const q = since === undefined ? '' : `&since=${encodeURIComponent(formatUs(since))}`
      const t = performance.now()
      const res = await requestNoRedirect(`${server.base}/v1/policy?instance_id=bench-1${q}`, {
        dispatcher: agent,
        headers: { authorization: `Bearer ${tokens['bench-1']}` },
        maxBytes: 256 * 1024 * 1024,
      })
      const body = res.json<{ cursor: string; decisions: unknown[]; more: boolean }>()
      return { ms: performance.now() - t, body }
    }
    const full: number[] = []
    for (let r = 0; r < 5; r++) {
      const t = performance.now()
      let since: number | undefined
      let got = 0
      for (;;) {
        const { body } = await pull(since)
        got += body.decisions.length
        since = parseUs(body.cursor)
        if (!body.more) break
      }
      if (got !== DECISIONS) throw new Error(`full pull got ${got}`)
      full.push(performance.now() - t)
    }
    const incSince = startUs + DECISIONS - 11
    const inc: number[] = []
    for (let r = 0; r < PULLS; r++) {
      const { ms: t, body } = await pull(incSince)
      if (body.decisions.length !== 10) throw new Error('incremental pull size')
      inc.push(t)
    }
    // The same pull while the 32 gates upload pages as fast as they are answered: it waits
    // for the observation writes ahead of it (SQLite: one connection, groups of pages).
    let ingesting = true
    let uploaded = 0
    const origin = new URL(server.base).origin
    const stamp = new Date().toISOString()
    const uploads = Promise.all(
      Array.from({ length: GATES }, async (_, gate) => {
        const id = `gate-${gate}`
        const bodies = Array.from({ length: 8 }, (_, n) =>
          JSON.stringify({
            instance_id: id,
            observations: page(gate, n, 0, 15).map((o, k) => ({ ...o, first_seen: stamp, last_seen: stamp, count: k })),
          }),
        )
        for (let n = 0; ingesting; n++) {
          const res = await agent.request({
            origin,
            path: `/v1/observations/batch?instance_id=${id}`,
            method: 'POST',
            headers: { authorization: `Bearer ${tokens[id]}`, 'content-type': 'application/json' },
            body: bodies[n % bodies.length]!,
          })
          await res.body.text()
          if (res.statusCode !== 200) throw new Error(`ingest answered ${res.statusCode}`)
          uploaded++
        }
      }),
    )
    await new Promise((r) => setTimeout(r, 1000))
    // Where a slow pull waits: the server's event loop (its /metrics event-loop lag, which each
    // scrape resets), this process's own (the 32 uploaders share it with the timed pulls), or
    // neither (the pool or the database).
    await serverLoopLag(server.base, agent)
    const ownLoop = monitorEventLoopDelay({ resolution: 1 })
    ownLoop.enable()
    const busy: number[] = []
    const busyStart = performance.now()
    const uploaded0 = uploaded
    for (let r = 0; r < BUSY_PULLS; r++) {
      const { ms: t, body } = await pull(incSince)
      if (body.decisions.length !== 10) throw new Error('incremental pull size')
      busy.push(t)
    }
    const pagesPerSecond = ((uploaded - uploaded0) / (performance.now() - busyStart)) * 1000
    ownLoop.disable()
    const serverLoop = await serverLoopLag(server.base, agent)
    ingesting = false
    await uploads
    const raw = (since: number, limit: number) =>
      CompiledQuery.raw(
        'select * from decisions where scope_type = $1 and scope_id = $2 and updated_us > $3 order by updated_us limit $4'.replace(
          /\$\d/g,
          (m) => (direct.kind === 'postgres' ? m : '?'),
        ),
        ['instance', 'bench-1', since, limit],
      )
    const rawInc: number[] = []
    for (let r = 0; r < PULLS; r++) {
      const t = performance.now()
      await direct.db.executeQuery(raw(incSince, 5001))
      rawInc.push(performance.now() - t)
    }
    const rawFull: number[] = []
    for (let r = 0; r < 5; r++) {
      const t = performance.now()
      let since = 0
      for (;;) {
        const res = await direct.db.executeQuery<{ updated_us: number }>(raw(since, 5001))
        const rows = res.rows.slice(0, 5000)
        since = Number(rows.at(-1)?.updated_us ?? since)
        if (res.rows.length <= 5000) break
      }
      rawFull.push(performance.now() - t)
    }
    out['full pull (100k, pages of 5000)'] =
      `p50 ${ms(pct(full, 50))}, p99 ${ms(pct(full, 99))} (raw SQL p50 ${ms(pct(rawFull, 50))}; ratio ${(pct(full, 50) / pct(rawFull, 50)).toFixed(1)})`
    out['incremental pull (10 changed of 100k)'] =
      `p50 ${ms(pct(inc, 50))}, p99 ${ms(pct(inc, 99))} over ${PULLS} pulls`
    out['incremental pull during ingest'] =
      `p50 ${ms(pct(busy, 50))}, p99 ${ms(pct(busy, 99))} over ${busy.length} pulls, meanwhile ${(pagesPerSecond * PAGE).toFixed(0)} obs/s uploaded`
    out['event-loop delay during those pulls'] =
      `server p50 ${serverLoop.p50} ms, p99 ${serverLoop.p99} ms, max ${serverLoop.max} ms; load generator p99 ${(ownLoop.percentile(99) / 1e6).toFixed(1)} ms, max ${(ownLoop.max / 1e6).toFixed(1)} ms`
    out['incremental raw SQL baseline'] =
      `p50 ${ms(pct(rawInc, 50))}, p99 ${ms(pct(rawInc, 99))} (ratio p50 ${(pct(inc, 50) / pct(rawInc, 50)).toFixed(1)})`
  }
}

/** The server's own CPU seconds (its process collector) and its group-size histogram's sum and count. */
async function serverMetrics(
  base: string,
  agent: ReturnType<typeof createTlsAgent>,
): Promise<{ cpu: number; pages: number; groups: number }> {
  const text = (await requestNoRedirect(`${base}/metrics`, { dispatcher: agent })).body.toString('utf8')
  const value = (name: string) => {
    const v = metric(text, name)
    if (v === undefined) throw new Error(`no ${name} in /metrics`)
    return v
  }
  return {
    cpu: value('process_cpu_seconds_total'),
    pages: value('edgegate_observation_group_pages_sum'),
    groups: value('edgegate_observation_group_pages_count'),
  }
}

/** Pages per group-commit transaction between two readings. */
const pagesPerGroup = (a: { pages: number; groups: number }, b: { pages: number; groups: number }) =>
  (b.pages - a.pages) / Math.max(1, b.groups - a.groups)

/** The server's event-loop delay since the last scrape (prom-client's lag gauges, in ms). */
async function serverLoopLag(
  base: string,
  agent: ReturnType<typeof createTlsAgent>,
): Promise<{ p50: string; p99: string; max: string }> {
  const text = (await requestNoRedirect(`${base}/metrics`, { dispatcher: agent })).body.toString('utf8')
  const gauge = (name: string) => {
    const m = new RegExp(`^nodejs_eventloop_lag_${name}_seconds (\\S+)$`, 'm').exec(text)
    return m ? (Number(m[1]) * 1000).toFixed(1) : '?'
  }
  return { p50: gauge('p50'), p99: gauge('p99'), max: gauge('max') }
}

function formatUs(us: number): string {
  return `${new Date(Math.floor(us / 1000)).toISOString().slice(0, 23)}${String(us % 1000).padStart(3, '0')}Z`
}
function parseUs(text: string): number {
  return Date.parse(text) * 1000 + Number(text.slice(23, 26))
}

const cpu = cpus()
process.stdout.write(
  `machine: ${cpu.length} x ${cpu[0]?.model ?? 'cpu'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}\n`,
)
try {
  for (const dialect of ['sqlite', 'postgres'] as const) {
    if (!DIALECT_LIST.includes(dialect)) continue
    const r = await benchDialect(dialect)
    process.stdout.write(`\n${dialect}\n`)
    for (const [k, v] of Object.entries(r)) process.stdout.write(`  ${k}: ${v}\n`)
  }
} finally {
  await postgres?.stop()
  tls.ca.remove()
}
