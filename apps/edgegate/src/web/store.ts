/**
 * The correlation of web signals with TLS sightings, as one SQL join: a signal observed in
 * the report's interval matches every sighting of the same client IP, for the same host,
 * seen at most five minutes before or after it. A signal counts once per (gate, fingerprint)
 * however many of that fingerprint's sightings match it.
 *
 * The report no longer runs this join: it reads the same matches from `web_evidence`, found
 * at ingest (evidence.ts). The join stays as the definition the evidence table is tested
 * against (test/web-evidence.test.ts) and as the benchmark's baseline.
 */

import type { Kysely, Transaction } from 'kysely'
import { sql } from 'kysely'
import type { DB, WebEvidenceTable } from '../db/schema.ts'

type Db = Kysely<DB> | Transaction<DB>

/** Signal/sighting correlation distance (spec: within five minutes), inclusive at both ends. */
export const CORRELATION_MS = 5 * 60 * 1000

/** One (gate, fingerprint, signal) match: a `web_evidence` row without its bookkeeping. */
export type MatchRow = Omit<WebEvidenceTable, 'sighting_ms' | 'network'>

/** Driver rows to matches (PostgreSQL returns bigint columns as strings). */
export function toMatchRows(rows: ReadonlyArray<Record<keyof MatchRow, unknown>>): MatchRow[] {
  // SQLite returns the columns typed already: keep its rows rather than copy every one.
  const first = rows[0]
  if (first === undefined || typeof first.observed_ms === 'number') return rows as MatchRow[]
  return rows.map((r) => ({
    gate: String(r.gate),
    fingerprint: String(r.fingerprint),
    node: String(r.node),
    event_id: String(r.event_id),
    site: String(r.site),
    ip: String(r.ip),
    observed_ms: Number(r.observed_ms),
    connections: Number(r.connections),
    errors: Number(r.errors),
    successes: Number(r.successes),
  }))
}

/** Every (gate, fingerprint, signal) match for signals observed in [fromMs, toMs]. */
export async function matchSignals(db: Db, fromMs: number, toMs: number): Promise<MatchRow[]> {
  const { rows } = await matchQuery(fromMs, toMs).execute(db)
  return toMatchRows(rows)
}

/**
 * The join itself (the benchmark runs its compiled text on the raw driver as the baseline):
 * matches by host (the sighting's SNI equals the signal's host) and, for paired nodes, by
 * pairing (any sighting of the paired TLS gate); UNION removes the pairs both rules find.
 * `cross join` makes SQLite start from the (small) pairing table, so that branch costs nothing
 * without pairings instead of a second pass over the window's signals.
 */
export function matchQuery(fromMs: number, toMs: number) {
  const near = sql.lit(CORRELATION_MS)
  return sql<MatchRow>`select t.instance_id as gate, t.fingerprint as fingerprint,
  s.instance_id as node, s.event_id as event_id, s.observed_ms as observed_ms, s.site as site, s.ip as ip,
  s.connections as connections, s.errors as errors, s.successes as successes
from signals s
join web_sightings t on t.ip = s.ip and t.host = s.host
  and t.seen_ms >= s.observed_ms - ${near} and t.seen_ms <= s.observed_ms + ${near}
where s.observed_ms >= ${fromMs} and s.observed_ms <= ${toMs}
union
select t.instance_id, t.fingerprint, s.instance_id, s.event_id, s.observed_ms, s.site, s.ip,
  s.connections, s.errors, s.successes
from web_node_pairs p
cross join signals s
join web_sightings t on t.instance_id = p.tlsgate_id and t.ip = s.ip
  and t.seen_ms >= s.observed_ms - ${near} and t.seen_ms <= s.observed_ms + ${near}
where s.instance_id = p.websignal_id and s.observed_ms >= ${fromMs} and s.observed_ms <= ${toMs}`
}
