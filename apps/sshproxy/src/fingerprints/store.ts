/**
 * SQL for fingerprint entries. Every function takes the database or a transaction first, so
 * callers own transactions. Writes start with `nextChangeSeq`, whose UPDATE takes SQLite's
 * write lock before any read: a CLI process and `serve` then queue on the busy timeout
 * instead of failing on a stale snapshot. What both gates do alike is the kit's (gate-store.ts):
 * decoding and merging an entry's sets (128 IPs, ports, sightings, the control plane's rules),
 * recording observations and setting verdicts; this file adds the SSH gate's own columns.
 */

import { EDGE_LIMITS } from '@gatehouse/kit/edge-limits.ts'
import {
  boundMetadata,
  decodeStoredSets,
  deleteEntry,
  mergeStoredSets,
  nextChangeSeq,
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

export interface Sighting extends StoredSighting {
  /** Local port of the gate's connection to the backend: sshd logs `from <gate> port <relay_port>`. */
  relay_port?: number
  /** Local address of that connection (what sshd logs as the peer). */
  relay_ip?: string
}

export type Db = Kysely<DB> | Transaction<DB>

/** What the gate does with a fingerprint, and its per-connection reader, are the kit's (gate-verdict.ts). */
export { type GateStatus, gateStatus, gateStatusReader } from '@gatehouse/kit/gate-verdict.ts'
/** The SQL both gates share is the kit's (packages/kit/src/gate-store.ts). */
export { deleteEntry, nextChangeSeq, pruneToCap, removeExpiredSightings, setLabel }

/** One fingerprint's observations gathered since the last flush. */
export interface Observation {
  fingerprint: string
  identification: string
  clientVersion: string
  /** JSON of the KEXINIT lists. */
  metadata: string
  count: number
  /** Of `count`, connections let through as unknown under `--allow-unknown`. */
  enrolled: number
  firstSeen: string
  lastSeen: string
  sightings: Sighting[]
}

/** An entry with its JSON columns decoded. */
export interface FingerprintEntry extends Omit<FingerprintRow, 'ips' | 'ports' | 'sightings' | 'metadata'> {
  ips: string[]
  ports: number[]
  sightings: Sighting[]
  metadata: Record<string, unknown>
}

export function decodeEntry(row: FingerprintRow): FingerprintEntry {
  return { ...row, ...decodeStoredSets<Sighting>(row) }
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

/** The SSH gate's own columns of an observed entry (the kit writes the shared ones). */
const OWN_COLUMNS: OwnObservationColumns<Observation> = {
  insert: (o) => ({
    identification: o.identification,
    client_version: o.clientVersion,
    enrolled_count: o.enrolled,
  }),
  update: (o) => ({
    identification: o.identification,
    client_version: o.clientVersion,
    enrolled_count: sql`enrolled_count + ${o.enrolled}`,
  }),
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

/**
 * Bring entries written by older or other versions within the bounds: oversized metadata is
 * dropped and history beyond 128 values trimmed; verdicts, labels and counts stay.
 */
export async function trimOversized(db: Kysely<DB>): Promise<number> {
  const tooMany = (col: string) =>
    sql`iif(json_valid(${sql.ref(col)}), json_array_length(${sql.ref(col)}) > ${EDGE_LIMITS.perFingerprint}, 1) = 1`
  const rows = await db
    .selectFrom('fingerprints')
    .select(['fingerprint', 'metadata', 'ips', 'ports', 'sightings'])
    .where(
      sql<boolean>`length(cast(metadata as blob)) > ${EDGE_LIMITS.metadataBytes} or ${tooMany('ips')} or ${tooMany('ports')} or ${tooMany('sightings')}`,
    )
    .execute()
  for (const row of rows) {
    await db
      .updateTable('fingerprints')
      .set({
        metadata: boundMetadata(row.metadata),
        ...mergeStoredSets(row, []),
      })
      .where('fingerprint', '=', row.fingerprint)
      .execute()
  }
  return rows.length
}
