/**
 * SQL for fingerprint entries. Every function takes the database or a transaction first, so
 * callers own transactions. Writes start with `nextChangeSeq`, whose UPDATE takes SQLite's
 * write lock before any read: a CLI process and `serve` then queue on the busy timeout
 * instead of failing on a stale snapshot. What both gates do alike is the kit's (gate-store.ts):
 * decoding and merging an entry's sets (128 IPs, ports, sightings, the control plane's rules),
 * recording observations and setting verdicts; this file adds the TLS gate's own columns.
 */

import {
  decodeStoredSets,
  deleteEntry,
  type OwnObservationColumns,
  pruneToCap,
  recordObservations as recordGateObservations,
  removeExpiredSightings,
  type StoredSighting,
  setLabel,
  setVerdict,
} from '@gatehouse/kit/gate-store.ts'
import { type Kysely, sql, type Transaction } from 'kysely'
import type { DB, FingerprintRow } from '../db/schema.ts'

export type Db = Kysely<DB> | Transaction<DB>

/** What the gate does with a fingerprint, and its per-connection reader, are the kit's (gate-verdict.ts). */
export { type GateStatus, gateStatus, gateStatusReader } from '@gatehouse/kit/gate-verdict.ts'
/** The SQL both gates share is the kit's (packages/kit/src/gate-store.ts). */
export { deleteEntry, pruneToCap, removeExpiredSightings, setLabel }

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

export async function getEntry(db: Db, fingerprint: string): Promise<FingerprintEntry | undefined> {
  const row = await db.selectFrom('fingerprints').selectAll().where('fingerprint', '=', fingerprint).executeTakeFirst()
  return row && decodeEntry(row)
}

export async function listEntries(db: Db): Promise<FingerprintEntry[]> {
  const rows = await db.selectFrom('fingerprints').selectAll().orderBy('last_seen', 'desc').execute()
  return rows.map(decodeEntry)
}

/** Set the verdict, with the label and the expiry when given (the kit's). */
export { setVerdict }

/** The TLS gate's own columns of an observed entry (the kit writes the shared ones). */
const OWN_COLUMNS: OwnObservationColumns<Observation> = {
  insert: (o) => ({ refused_count: o.refused }),
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
