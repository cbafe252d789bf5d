/**
 * Correlation at ingest time: the signal/sighting matches of the web candidate report, kept in
 * `web_evidence` (one row per TLS gate, fingerprint and signal) as signals and TLS sightings
 * arrive, so a report reads the matches of its interval instead of joining every signal of the
 * window with the sightings (spec "Web candidates"; design in docs/performance/edgegate.md).
 *
 * A row exists exactly when the report's join would find the pair: each new signal probes the
 * stored sightings, each new TLS sighting probes the stored signals, a new pairing probes both
 * for its two nodes, and a removed pairing recomputes its nodes' rows by the host rule alone.
 * `sighting_ms` is the newest matching sighting, so the sighting retention sweep can drop the
 * rows whose sightings are all gone.
 *
 * Concurrency: a signal and a matching sighting may arrive at once. On SQLite the write lock
 * serialises the two transactions, so the second one sees the first. On PostgreSQL each
 * correlating transaction takes one transaction-level advisory lock after its insert and before
 * its probe: whichever commits second probes after the first committed, and finds it.
 */
import type { Database, DatabaseKind, PreparedQuery } from '@gatehouse/kit'
import { deleteBefore } from '@gatehouse/kit/db/batched-delete.ts'
import type { SyncTransaction } from '@gatehouse/kit/db/database.ts'
import { type Kysely, type RawBuilder, sql, type Transaction } from 'kysely'
import type { DB, WebEvidenceGroupTable } from '../db/schema.ts'
import { CORRELATION_MS, type MatchRow, toMatchRows } from './store.ts'

type Db = Kysely<DB> | Transaction<DB>

/** PostgreSQL advisory lock key of ingest-time correlation ("edgewevd"). */
export const CORRELATION_LOCK_KEY = 0x6564676577657664n

/** Values per `in (...)` list, well under both dialects' parameter limits. */
const CHUNK = 500

/** Serialise correlating transactions on PostgreSQL (see the module comment); SQLite needs nothing. */
export async function lockCorrelation(trx: Transaction<DB>, kind: DatabaseKind): Promise<void> {
  if (kind !== 'postgres') return
  await sql`select pg_advisory_xact_lock(${sql.lit(CORRELATION_LOCK_KEY.toString())}::bigint)`.execute(trx)
}

const UPSERT = sql`on conflict (gate, fingerprint, node, event_id) do update set sighting_ms =
  case when excluded.sighting_ms > web_evidence.sighting_ms then excluded.sighting_ms else web_evidence.sighting_ms end
returning gate, fingerprint, observed_ms`

const COLUMNS = sql`t.instance_id, t.fingerprint, s.instance_id, s.event_id, s.observed_ms, s.site, s.ip, s.network,
  s.connections, s.errors, s.successes`
type Touched = { gate: string; fingerprint: string; observed_ms: number }

/**
 * The addresses a correlation starts from: a list of values, or a subquery of one column (the
 * prepared SQLite form takes them as one JSON array: `select value from json_each(?)`).
 */
export type Addresses = readonly string[] | RawBuilder<unknown>

const addressRows = (addresses: Addresses) =>
  Array.isArray(addresses)
    ? sql`values ${sql.join(addresses.map((ip) => sql`(cast(${ip} as text))`))}`
    : (addresses as RawBuilder<unknown>)
const addressList = (addresses: Addresses) =>
  Array.isArray(addresses) ? sql.join(addresses.map((ip) => sql`${ip}`)) : (addresses as RawBuilder<unknown>)

/**
 * The host rule's statement of `correlate` (exported for the plan tests). With `addresses`,
 * `where` is a condition on the sightings `t` alone.
 */
export function hostRule(
  where: RawBuilder<unknown>,
  addresses?: Addresses,
  kind: DatabaseKind = 'sqlite',
): RawBuilder<Touched> {
  const near = sql.lit(CORRELATION_MS)
  const into = sql`insert into web_evidence (gate, fingerprint, node, event_id, observed_ms, site, ip, network,
  connections, errors, successes, sighting_ms)
select ${COLUMNS}, max(t.seen_ms)`
  const window = sql`t.seen_ms >= s.observed_ms - ${near} and t.seen_ms <= s.observed_ms + ${near}`
  if (addresses === undefined)
    return sql<Touched>`${into}
from signals s
join web_sightings t on t.ip = s.ip and t.host = s.host and ${window}
where ${where}
group by ${COLUMNS}
${UPSERT}`
  // PostgreSQL: each address probes the gate's sightings by (gate, address, time) in a
  // subquery the planner keeps (`offset 0`). Joined plainly, it estimated a handful of rows for
  // the gate's newest time range (beyond its statistics' histogram while sightings stream in),
  // scanned all of them and hashed the addresses: 40,960 rows and 25 ms a TLS page at 1.3
  // million sightings (docs/performance/edgegate.md).
  if (kind === 'postgres')
    return sql<Touched>`with n (ip) as (${addressRows(addresses)})
${into}
from n
cross join lateral (select * from web_sightings t where t.ip = n.ip and ${where} offset 0) t
join signals s on t.ip = s.ip and t.host = s.host and ${window}
group by ${COLUMNS}
${UPSERT}`
  return sql<Touched>`with n (ip) as (${addressRows(addresses)})
${into}
from n
cross join web_sightings t
join signals s on t.ip = s.ip and t.host = s.host and ${window}
where t.ip = n.ip and ${where}
group by ${COLUMNS}
${UPSERT}`
}

/** The pairing rule's statement of `correlate`: a paired node's signals match its TLS gates' sightings whatever the host. */
function pairRule(where: RawBuilder<unknown>, addresses?: Addresses): RawBuilder<Touched> {
  const near = sql.lit(CORRELATION_MS)
  return sql<Touched>`insert into web_evidence (gate, fingerprint, node, event_id, observed_ms, site, ip, network,
  connections, errors, successes, sighting_ms)
select ${COLUMNS}, max(t.seen_ms)
from web_node_pairs p
cross join signals s
join web_sightings t on t.instance_id = p.tlsgate_id and t.ip = s.ip
  and t.seen_ms >= s.observed_ms - ${near} and t.seen_ms <= s.observed_ms + ${near}
where s.instance_id = p.websignal_id and ${where}${addresses === undefined ? sql`` : sql` and t.ip in (${addressList(addresses)})`}
group by ${COLUMNS}
${UPSERT}`
}

/** The (gate, fingerprint) pairs the rules' RETURNING rows touched, each with its newest signal time. */
function touchedGroups(
  lists: ReadonlyArray<ReadonlyArray<{ gate: string; fingerprint: string; observed_ms: number | string }>>,
): WebEvidenceGroupTable[] {
  const touched = new Map<string, Map<string, number>>()
  for (const rows of lists)
    for (const r of rows) {
      let byFp = touched.get(r.gate)
      if (!byFp) {
        byFp = new Map()
        touched.set(r.gate, byFp)
      }
      const ms = Number(r.observed_ms)
      if (ms > (byFp.get(r.fingerprint) ?? Number.NEGATIVE_INFINITY)) byFp.set(r.fingerprint, ms)
    }
  const groups: WebEvidenceGroupTable[] = []
  for (const [gate, byFp] of touched)
    for (const [fingerprint, last_ms] of byFp) groups.push({ gate, fingerprint, last_ms })
  return groups
}

const GROUP_NEWEST = sql<number>`case when excluded.last_ms > web_evidence_groups.last_ms then excluded.last_ms else web_evidence_groups.last_ms end`

/**
 * Insert the matches the join finds under `where` (a condition on signals `s` and sightings
 * `t`): one statement for the host rule, one for the pairing rule (each with the index that
 * suits it). Idempotent: a match already stored only keeps the newer sighting time. The pairs
 * they touch are recorded in `web_evidence_groups` with their newest signal time.
 * `addresses`, when given, limits the sightings to those addresses too (`t.ip`), and the host
 * rule then starts from them: a list of them joined first (SQLite keeps a CROSS JOIN's order),
 * each looked up in `web_sightings_gate_ip_seen`. Given as `t.ip in (...)`, SQLite without
 * statistics read the gate's every stored sighting by the primary key's first column instead
 * (150 ms at 1.3 million sightings, for every TLS page; docs/performance/edgegate.md).
 */
export async function correlate(
  db: Db,
  where: RawBuilder<unknown>,
  addresses?: Addresses,
  kind?: DatabaseKind,
): Promise<void> {
  const groups = touchedGroups([
    (await hostRule(where, addresses, kind).execute(db)).rows,
    (await pairRule(where, addresses).execute(db)).rows,
  ])
  for (let i = 0; i < groups.length; i += CHUNK) {
    await db
      .insertInto('web_evidence_groups')
      .values(groups.slice(i, i + CHUNK))
      .onConflict((oc) => oc.columns(['gate', 'fingerprint']).doUpdateSet({ last_ms: GROUP_NEWEST }))
      .execute()
  }
}

/** The sighting side's condition of `correlateSightings`: one gate's sightings in a time range. */
const gateSightings = (gate: unknown, fromMs: unknown, toMs: unknown) =>
  sql`t.instance_id = ${gate} and t.seen_ms >= ${fromMs} and t.seen_ms <= ${toMs}`

/** Correlate signals of one node just stored (by event id) with the stored sightings. */
export async function correlateSignals(db: Db, node: string, eventIds: readonly string[]): Promise<void> {
  for (let i = 0; i < eventIds.length; i += CHUNK) {
    const ids = sql.join(eventIds.slice(i, i + CHUNK).map((e) => sql`${e}`))
    await correlate(db, sql`s.instance_id = ${node} and s.event_id in (${ids})`)
  }
}

/**
 * Correlate sightings of one TLS gate just stored with the stored signals: every sighting of
 * the gate for these addresses within [fromMs, toMs] (a superset of the new ones, which only
 * re-finds stored matches).
 */
export async function correlateSightings(
  db: Db,
  kind: DatabaseKind,
  gate: string,
  ips: readonly string[],
  fromMs: number,
  toMs: number,
): Promise<void> {
  for (let i = 0; i < ips.length; i += CHUNK) {
    await correlate(db, gateSightings(gate, fromMs, toMs), ips.slice(i, i + CHUNK), kind)
  }
}

/** SQLite: `correlateSightings` as prepared statements, for a synchronous transaction (`transactionSync`). */
export interface SyncSightingCorrelation {
  host: PreparedQuery<Touched>
  pair: PreparedQuery<Touched>
  group: PreparedQuery<unknown>
  /** Where each statement's parameters go: the gate, the time range and the addresses (a JSON array). */
  hostOrder: ParameterName[]
  pairOrder: ParameterName[]
}
type ParameterName = 'gate' | 'from' | 'to' | 'addresses'

/**
 * Prepare the sighting side of `correlate` on SQLite: the same statements, the addresses given
 * as one JSON array (`json_each`), so each has one text whatever the page and is prepared once.
 */
export function prepareSyncSightingCorrelation(database: Database<DB>): SyncSightingCorrelation {
  // Distinct example values mark where each parameter lands in the compiled statement.
  const marks: Record<ParameterName, object> = { gate: {}, from: {}, to: {}, addresses: {} }
  const where = gateSightings(marks.gate, marks.from, marks.to)
  const addresses = sql`select value from json_each(${marks.addresses})`
  const order = (parameters: readonly unknown[]) =>
    parameters.map((p) => {
      const name = (Object.keys(marks) as ParameterName[]).find((k) => marks[k] === p)
      if (name === undefined) throw new Error('correlation statement has a parameter of its own')
      return name
    })
  const host = hostRule(where, addresses).compile(database.db)
  const pair = pairRule(where, addresses).compile(database.db)
  return {
    host: database.prepare({ compile: () => host }),
    pair: database.prepare({ compile: () => pair }),
    group: database.prepare(
      database.db
        .insertInto('web_evidence_groups')
        .values({ gate: '', fingerprint: '', last_ms: 0 })
        .onConflict((oc) => oc.columns(['gate', 'fingerprint']).doUpdateSet({ last_ms: GROUP_NEWEST })),
    ),
    hostOrder: order(host.parameters),
    pairOrder: order(pair.parameters),
  }
}

/** `correlateSightings` in a synchronous SQLite transaction (see `prepareSyncSightingCorrelation`). */
export function correlateSightingsSync(
  tx: SyncTransaction,
  c: SyncSightingCorrelation,
  gate: string,
  ips: readonly string[],
  fromMs: number,
  toMs: number,
): void {
  const values: Record<ParameterName, unknown> = { gate, from: fromMs, to: toMs, addresses: JSON.stringify(ips) }
  const groups = touchedGroups([
    tx.all(c.host, ...c.hostOrder.map((k) => values[k])),
    tx.all(c.pair, ...c.pairOrder.map((k) => values[k])),
  ])
  for (const g of groups) tx.run(c.group, g.gate, g.fingerprint, g.last_ms)
}

/**
 * Recompute the matches of one (web signal node, TLS gate) pair after its pairing changed:
 * drop them and find them again under the pairings now stored.
 */
export async function recorrelatePair(db: Db, node: string, gate: string): Promise<void> {
  await db.deleteFrom('web_evidence').where('node', '=', node).where('gate', '=', gate).execute()
  await correlate(db, sql`s.instance_id = ${node} and t.instance_id = ${gate}`)
}

/** Every stored match for signals observed in [fromMs, toMs] (tests compare it with the join). */
export async function evidenceMatches(db: Db, fromMs: number, toMs: number): Promise<MatchRow[]> {
  return toMatchRows(
    await db
      .selectFrom('web_evidence')
      .select([
        'gate',
        'fingerprint',
        'node',
        'event_id',
        'observed_ms',
        'site',
        'ip',
        'connections',
        'errors',
        'successes',
      ])
      .where('observed_ms', '>=', fromMs)
      .where('observed_ms', '<=', toMs)
      .execute(),
  )
}

/** One (gate, fingerprint) of a report: its matches' aggregates and distinct values, from SQL. */
export interface GroupedEvidence {
  gate: string
  fingerprint: string
  signals: number
  connections: number
  errors: number
  successes: number
  first_ms: number
  last_ms: number
  ip_count: number
  networks: string[]
  sites: string[]
  nodes: string[]
}

/**
 * The report's read: every (gate, fingerprint) with matches for signals observed in
 * [fromMs, toMs], aggregated by the database. It walks `web_evidence_groups` in key order and
 * reads each pair's matches of the interval along `web_evidence_group` (gate, fingerprint,
 * observed_ms, …), so SQLite aggregates as it scans, with no sort of the window's matches and
 * no JavaScript object per match (docs/performance/edgegate.md has both plans).
 */
export async function groupedEvidence(
  db: Db,
  kind: DatabaseKind,
  fromMs: number,
  toMs: number,
): Promise<GroupedEvidence[]> {
  const { rows } = await groupedEvidenceQuery(kind, fromMs, toMs).execute(db)
  // PostgreSQL parses json_agg and (int8 parser) the sums itself; SQLite returns JSON text.
  if (kind !== 'sqlite') return rows as GroupedEvidence[]
  for (const r of rows) {
    r.networks = JSON.parse(r.networks as string)
    r.sites = JSON.parse(r.sites as string)
    r.nodes = JSON.parse(r.nodes as string)
  }
  return rows as GroupedEvidence[]
}

/** The statement of `groupedEvidence` (the bench prints its plan). */
export function groupedEvidenceQuery(kind: DatabaseKind, fromMs: number, toMs: number) {
  const sqlite = kind === 'sqlite'
  // SQLite's CROSS JOIN keeps the written join order: the pairs, then their matches.
  const join = sqlite ? sql`cross join` : sql`join`
  const list = (column: string) =>
    sqlite ? sql`json_group_array(distinct e.${sql.ref(column)})` : sql`json_agg(distinct e.${sql.ref(column)})`
  return sql<GroupedEvidence & Record<'networks' | 'sites' | 'nodes', string | string[]>>`select
  g.gate as gate, g.fingerprint as fingerprint, count(*) as signals, sum(e.connections) as connections,
  sum(e.errors) as errors, sum(e.successes) as successes, min(e.observed_ms) as first_ms,
  max(e.observed_ms) as last_ms, count(distinct e.ip) as ip_count, ${list('network')} as networks,
  ${list('site')} as sites, ${list('node')} as nodes
from web_evidence_groups g
${join} web_evidence e on e.gate = g.gate and e.fingerprint = g.fingerprint
  and e.observed_ms >= ${fromMs} and e.observed_ms <= ${toMs}
where g.last_ms >= ${fromMs}
group by g.gate, g.fingerprint`
}

/** Retention: drop matches of swept signals (observed before) or swept sightings (all seen before). */
export async function sweepEvidence(db: Db, signalCutoffMs: number, sightingCutoffMs: number): Promise<number> {
  const a = await deleteBefore(db, 'web_evidence', 'observed_ms', signalCutoffMs)
  const b = await deleteBefore(db, 'web_evidence', 'sighting_ms', sightingCutoffMs)
  // A pair whose newest signal is past retention has no evidence left (one row per pair: no
  // batches). Read first: most runs have none, and a read-only database refuses even an empty delete.
  const stale = db.selectFrom('web_evidence_groups').where('last_ms', '<', signalCutoffMs)
  if (
    (await stale
      .select((eb) => eb.lit(1).as('one'))
      .limit(1)
      .executeTakeFirst()) !== undefined
  )
    await db.deleteFrom('web_evidence_groups').where('last_ms', '<', signalCutoffMs).execute()
  return a + b
}
