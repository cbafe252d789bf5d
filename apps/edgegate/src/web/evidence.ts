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
import type { DatabaseKind } from '@gatehouse/kit'
import { type Kysely, type RawBuilder, sql, type Transaction } from 'kysely'
import type { DB } from '../db/schema.ts'
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
  case when excluded.sighting_ms > web_evidence.sighting_ms then excluded.sighting_ms else web_evidence.sighting_ms end`

/**
 * Insert the matches the join finds under `where` (a condition on signals `s` and sightings
 * `t`): one statement for the host rule, one for the pairing rule (each with the index that
 * suits it). Idempotent: a match already stored only keeps the newer sighting time.
 */
export async function correlate(db: Db, where: RawBuilder<unknown>): Promise<void> {
  const near = sql.lit(CORRELATION_MS)
  const columns = sql`t.instance_id, t.fingerprint, s.instance_id, s.event_id, s.observed_ms, s.site, s.ip,
  s.connections, s.errors, s.successes`
  await sql`insert into web_evidence (gate, fingerprint, node, event_id, observed_ms, site, ip, connections, errors,
  successes, sighting_ms)
select ${columns}, max(t.seen_ms)
from signals s
join web_sightings t on t.ip = s.ip and t.host = s.host
  and t.seen_ms >= s.observed_ms - ${near} and t.seen_ms <= s.observed_ms + ${near}
where ${where}
group by ${columns}
${UPSERT}`.execute(db)
  await sql`insert into web_evidence (gate, fingerprint, node, event_id, observed_ms, site, ip, connections, errors,
  successes, sighting_ms)
select ${columns}, max(t.seen_ms)
from web_node_pairs p
cross join signals s
join web_sightings t on t.instance_id = p.tlsgate_id and t.ip = s.ip
  and t.seen_ms >= s.observed_ms - ${near} and t.seen_ms <= s.observed_ms + ${near}
where s.instance_id = p.websignal_id and ${where}
group by ${columns}
${UPSERT}`.execute(db)
}

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
  gate: string,
  ips: readonly string[],
  fromMs: number,
  toMs: number,
): Promise<void> {
  for (let i = 0; i < ips.length; i += CHUNK) {
    const list = sql.join(ips.slice(i, i + CHUNK).map((ip) => sql`${ip}`))
    await correlate(
      db,
      sql`t.instance_id = ${gate} and t.ip in (${list}) and t.seen_ms >= ${fromMs} and t.seen_ms <= ${toMs}`,
    )
  }
}

/**
 * Recompute the matches of one (web signal node, TLS gate) pair after its pairing changed:
 * drop them and find them again under the pairings now stored.
 */
export async function recorrelatePair(db: Db, node: string, gate: string): Promise<void> {
  await db.deleteFrom('web_evidence').where('node', '=', node).where('gate', '=', gate).execute()
  await correlate(db, sql`s.instance_id = ${node} and t.instance_id = ${gate}`)
}

/** The read of a report: every stored match for signals observed in [fromMs, toMs]. */
export function evidenceQuery(db: Db, fromMs: number, toMs: number) {
  return db
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
}

/** Rows per page of a report's read (each page one short statement). */
const READ_PAGE = 20_000

/**
 * The matches of [fromMs, toMs], read in pages along the covering index (keyset on its leading
 * columns) and handed to `each` page by page, so no single statement holds SQLite's one
 * connection, and no single step Node's event loop, for the whole read of a large window.
 */
export async function forEachEvidencePage(
  db: Db,
  fromMs: number,
  toMs: number,
  each: (page: MatchRow[]) => void,
  pageSize = READ_PAGE,
): Promise<void> {
  let last: MatchRow | undefined
  for (;;) {
    let q = evidenceQuery(db, fromMs, toMs)
    if (last) {
      const l = last
      q = q.where(
        sql<boolean>`(observed_ms, gate, fingerprint, node, event_id) > (${l.observed_ms}, ${l.gate}, ${l.fingerprint}, ${l.node}, ${l.event_id})`,
      )
    }
    const page = toMatchRows(
      await q
        .orderBy('observed_ms')
        .orderBy('gate')
        .orderBy('fingerprint')
        .orderBy('node')
        .orderBy('event_id')
        .limit(pageSize)
        .execute(),
    )
    each(page)
    if (page.length < pageSize) return
    last = page[page.length - 1]
  }
}

/** Every match of [fromMs, toMs] (see `forEachEvidencePage`). */
export async function evidenceMatches(db: Db, fromMs: number, toMs: number, pageSize = READ_PAGE): Promise<MatchRow[]> {
  const out: MatchRow[] = []
  await forEachEvidencePage(
    db,
    fromMs,
    toMs,
    (page) => {
      for (const m of page) out.push(m)
    },
    pageSize,
  )
  return out
}

/** Retention: drop matches of swept signals (observed before) or swept sightings (all seen before). */
export async function sweepEvidence(db: Db, signalCutoffMs: number, sightingCutoffMs: number): Promise<number> {
  const a = await db.deleteFrom('web_evidence').where('observed_ms', '<', signalCutoffMs).executeTakeFirst()
  const b = await db.deleteFrom('web_evidence').where('sighting_ms', '<', sightingCutoffMs).executeTakeFirst()
  return Number(a.numDeletedRows) + Number(b.numDeletedRows)
}
