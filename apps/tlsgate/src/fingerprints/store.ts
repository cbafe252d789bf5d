/**
 * SQL for fingerprint entries. Every function takes the database or a transaction first, so
 * callers own transactions. Writes start with `nextChangeSeq`, whose UPDATE takes SQLite's
 * write lock before any read: a CLI process and `serve` then queue on the busy timeout
 * instead of failing on a stale snapshot. What both gates do alike is the kit's (gate-store.ts):
 * decoding and merging an entry's sets (128 IPs, ports, sightings, the control plane's rules),
 * recording observations and setting verdicts; this file adds the TLS gate's own columns.
 */

import type { Database } from '@gatehouse/kit/db/database.ts'
import { memoUntilChange, WalChanges } from '@gatehouse/kit/db/wal-changes.ts'
import {
  decodeStoredSets,
  deleteEntry,
  type OwnObservationColumns,
  pruneToCap,
  recordObservations as recordGateObservations,
  removeExpiredSightings,
  type StoredSighting,
  setVerdict as setGateVerdict,
  setLabel,
} from '@gatehouse/kit/gate-store.ts'
import { CompiledQuery, type Kysely, sql, type Transaction } from 'kysely'
import type { DB, FingerprintRow, Verdict } from '../db/schema.ts'

export type Db = Kysely<DB> | Transaction<DB>

/** The SQL both gates share is the kit's (packages/kit/src/gate-store.ts). */
export { deleteEntry, pruneToCap, removeExpiredSightings, setLabel }

/** What the gate does with a fingerprint: `unknown` when absent or observed but never decided. */
export type GateStatus = 'unknown' | Verdict

export type Sighting = StoredSighting

/** One fingerprint's connections gathered since the last flush. */
export interface Observation {
  fingerprint: string
  /** JSON of `{sni, ja3, ja4, ja4_r}` from the latest connection. */
  metadata: string
  count: number
  refused: number
  firstSeen: string
  lastSeen: string
  sightings: Sighting[]
}

/** An entry with its JSON columns decoded. */
export interface FingerprintEntry extends Omit<FingerprintRow, 'ips' | 'ports' | 'sightings' | 'metadata'> {
  ips: string[]
  ports: number[]
  sightings: Sighting[]
  metadata: Record<string, string>
}

export function decodeEntry(row: FingerprintRow): FingerprintEntry {
  const sets = decodeStoredSets(row)
  return { ...row, ...sets, metadata: sets.metadata as Record<string, string> }
}

const GATE_STATUS_SQL = 'select verdict, decided_at, expires_at from fingerprints where fingerprint = ?'
interface StatusRow {
  verdict: Verdict
  decided_at: string | null
  expires_at: string | null
}

function statusOf(row: StatusRow | undefined, now: number): GateStatus {
  if (!row || (row.verdict === 'pending' && row.decided_at === null)) return 'unknown'
  if (row.expires_at !== null && Date.parse(row.expires_at) <= now) return 'pending'
  return row.verdict
}

/**
 * The verdict the gate applies, read per connection so CLI changes apply at once. An
 * automated block past its `expires_at` counts as pending (the control plane also sends the
 * explicit pending; this covers a gate that cannot reach it).
 */
export async function gateStatus(db: Db, fingerprint: string, now = Date.now()): Promise<GateStatus> {
  const { rows } = await db.executeQuery<StatusRow>(CompiledQuery.raw(GATE_STATUS_SQL, [fingerprint]))
  return statusOf(rows[0], now)
}

/**
 * `gateStatus` for the gate's per-connection lookup: one statement prepared once and run
 * synchronously when the connection is free (the kit's `Database.prepare`). It reads committed
 * data only: it waits behind an open transaction like any query.
 */
export function gateStatusReader(
  store: Pick<Database<DB>, 'prepare' | 'sqlite'>,
): (fingerprint: string, now?: number) => Promise<GateStatus> {
  const query = store.prepare<StatusRow>({ compile: () => CompiledQuery.raw(GATE_STATUS_SQL, ['']) })
  const first = (fingerprint: string) => query.first(fingerprint)
  // The row is remembered until the database changes in any process (kit `WalChanges`); the
  // status is worked out per call, as an automated block expires with time.
  const path = store.sqlite?.location()
  const row = path ? memoUntilChange(new WalChanges(path), first) : first
  return async (fingerprint, now = Date.now()) => statusOf(await row(fingerprint), now)
}

export async function getEntry(db: Db, fingerprint: string): Promise<FingerprintEntry | undefined> {
  const row = await db.selectFrom('fingerprints').selectAll().where('fingerprint', '=', fingerprint).executeTakeFirst()
  return row && decodeEntry(row)
}

export async function listEntries(db: Db): Promise<FingerprintEntry[]> {
  const rows = await db.selectFrom('fingerprints').selectAll().orderBy('last_seen', 'desc').execute()
  return rows.map(decodeEntry)
}

/** Set the verdict (and the label when given); a manual verdict never expires. False when not stored. */
export function setVerdict(
  db: Kysely<DB>,
  fingerprint: string,
  change: { verdict: Verdict; actor: string; label?: string | undefined; now: string },
): Promise<boolean> {
  return setGateVerdict(db, fingerprint, change, { expires_at: null })
}

/** The TLS gate's own columns of an observed entry (the kit writes the shared ones). */
const OWN_COLUMNS: OwnObservationColumns<Observation> = {
  insert: (o) => ({ expires_at: null, refused_count: o.refused }),
  update: (o) => ({ refused_count: sql`refused_count + ${o.refused}` }),
}

/**
 * Merge a batch of observations into the store and enforce the entry cap, in one transaction
 * (the kit's `recordObservations`). `maxEntries` < 0 means unlimited.
 */
export function recordObservations(
  db: Kysely<DB>,
  observations: readonly Observation[],
  maxEntries: number,
  now: string,
): Promise<{ pruned: number }> {
  return recordGateObservations(db, observations, maxEntries, now, OWN_COLUMNS)
}
