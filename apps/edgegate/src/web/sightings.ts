/**
 * TLS sightings kept for the web candidate report: each sighting a `tlsgate` node uploads,
 * with the host (SNI) of the observation that carried it. The fingerprint aggregate keeps
 * only the newest metadata, so the host is recorded here, per sighting, at ingest.
 */
import type { Database, DatabaseKind, PreparedQuery } from '@gatehouse/kit'
import { deleteBefore } from '@gatehouse/kit/db/batched-delete.ts'
import type { SyncTransaction } from '@gatehouse/kit/db/database.ts'
import type { Kysely, Transaction } from 'kysely'
import type { DB, WebSightingTable } from '../db/schema.ts'
import type { Aggregate, StoredSighting } from '../observations/merge.ts'
import {
  correlateSightings,
  correlateSightingsSync,
  lockCorrelation,
  prepareSyncSightingCorrelation,
  type SyncSightingCorrelation,
} from './evidence.ts'

/** Rows per insert statement (7 parameters each, well under both dialects' limits). */
const CHUNK = 500

/**
 * The "same host" rule's normal form: lowercase, no trailing dot, no port. Signal hosts and
 * SNI values are compared in this form.
 */
export function normalizeHost(host: string): string {
  let h = host.trim().toLowerCase()
  if (h.startsWith('[')) {
    const end = h.indexOf(']')
    h = end === -1 ? h : h.slice(1, end)
  } else if (/^[^:]+:\d+$/.test(h)) {
    h = h.slice(0, h.lastIndexOf(':'))
  }
  return h.replace(/\.$/, '')
}

/**
 * The rows recording `sightings` (by default all of the aggregate's) of a TLS gate's
 * observation, each with the observation's host, added to `out` unless already there.
 */
export function addSightingRows(
  out: TlsSightingRows,
  instanceId: string,
  a: Aggregate,
  sightings: readonly StoredSighting[] = a.sightings,
): void {
  if (sightings.length === 0) return
  const host = normalizeHost(a.metadata.sni ?? '')
  for (const s of sightings) {
    const key = `${a.fingerprint}\u0000${s.ip}\u0000${s.port}\u0000${s.last_seen_ms}`
    if (out.seen.has(key)) continue
    out.seen.add(key)
    out.rows.push({
      instance_id: instanceId,
      fingerprint: a.fingerprint,
      ip: s.ip,
      port: s.port,
      host,
      seen_ms: s.last_seen_ms,
    })
  }
}

/** One gate's sightings to record (see `addSightingRows`). */
export interface TlsSightingRows {
  rows: WebSightingTable[]
  seen: Set<string>
}
export const tlsSightingRows = (): TlsSightingRows => ({ rows: [], seen: new Set() })

/** The addresses and time range a gate's recorded sightings are correlated over. */
function span(rows: readonly WebSightingTable[]): { ips: string[]; from: number; to: number } {
  let from = Number.POSITIVE_INFINITY
  let to = Number.NEGATIVE_INFINITY
  const ips = new Set<string>()
  for (const r of rows) {
    ips.add(r.ip)
    if (r.seen_ms < from) from = r.seen_ms
    if (r.seen_ms > to) to = r.seen_ms
  }
  return { ips: [...ips], from, to }
}

/**
 * Store one TLS gate's sightings and correlate them with the stored signals, in the caller's
 * transaction (idempotent: sightings already stored add nothing). Returns how many were new.
 */
export async function storeTlsSightings(
  trx: Transaction<DB>,
  kind: DatabaseKind,
  instanceId: string,
  rows: readonly WebSightingTable[],
): Promise<number> {
  let inserted = 0
  for (let i = 0; i < rows.length; i += CHUNK) {
    const r = await trx
      .insertInto('web_sightings')
      .values(rows.slice(i, i + CHUNK))
      .onConflict((oc) => oc.doNothing())
      .executeTakeFirst()
    inserted += Number(r.numInsertedOrUpdatedRows ?? 0)
  }
  if (inserted > 0) {
    const { ips, from, to } = span(rows)
    await lockCorrelation(trx, kind)
    await correlateSightings(trx, kind, instanceId, ips, from, to)
  }
  return inserted
}

/**
 * Store the sightings of a TLS gate's observation page and correlate them with the stored
 * signals, in a transaction of their own (the web bench and test fixtures; ingest records
 * them in the merge's transaction: observations/group-merge.ts).
 */
export async function recordTlsSightings(
  db: Kysely<DB>,
  kind: DatabaseKind,
  instanceId: string,
  aggregates: Aggregate[],
): Promise<number> {
  const out = tlsSightingRows()
  for (const a of aggregates) addSightingRows(out, instanceId, a)
  if (out.rows.length === 0) return 0
  return db.transaction().execute((trx) => storeTlsSightings(trx, kind, instanceId, out.rows))
}

/** SQLite: `storeTlsSightings`' statements, prepared, for a synchronous transaction. */
export interface SyncTlsSightings {
  insert: PreparedQuery<unknown>
  correlation: SyncSightingCorrelation
}

export function prepareSyncTlsSightings(database: Database<DB>): SyncTlsSightings {
  const example: WebSightingTable = { instance_id: '', fingerprint: '', ip: '', port: 0, host: '', seen_ms: 0 }
  return {
    insert: database.prepare(
      database.db
        .insertInto('web_sightings')
        .values(example)
        .onConflict((oc) => oc.doNothing()),
    ),
    correlation: prepareSyncSightingCorrelation(database),
  }
}

/** `storeTlsSightings` in a synchronous SQLite transaction (`transactionSync`). */
export function storeTlsSightingsSync(
  tx: SyncTransaction,
  s: SyncTlsSightings,
  instanceId: string,
  rows: readonly WebSightingTable[],
): number {
  let inserted = 0
  for (const r of rows) inserted += tx.run(s.insert, r.instance_id, r.fingerprint, r.ip, r.port, r.host, r.seen_ms)
  if (inserted > 0) {
    const { ips, from, to } = span(rows)
    correlateSightingsSync(tx, s.correlation, instanceId, ips, from, to)
  }
  return inserted
}

/** Remove TLS sightings seen before the cutoff (the `--sighting-retention` sweep). */
export function sweepTlsSightings(db: Kysely<DB>, cutoffMs: number): Promise<number> {
  return deleteBefore(db, 'web_sightings', 'seen_ms', cutoffMs)
}
