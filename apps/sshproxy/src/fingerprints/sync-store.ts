/**
 * Store functions for the control-plane sync (issue 4): entries changed since the last
 * acknowledged upload, small cursors, and pulled decisions applied atomically. The SQL is the
 * kit's (packages/kit/src/gate-store.ts), shared with tlsgate.
 */
import {
  applyDecisions as applyGateDecisions,
  changedRowsSince,
  compareTimes,
  getSyncState,
  type PulledDecision,
  setSyncState,
} from '@gatehouse/kit/gate-store.ts'
import type { Kysely } from 'kysely'
import type { DB, FingerprintRow } from '../db/schema.ts'
import { type Db, decodeEntry, type FingerprintEntry } from './store.ts'

export { compareTimes, getSyncState, type PulledDecision, setSyncState }

/** Entries whose `change_seq` is above `afterSeq`, oldest change first (the upload page). */
export async function changedSince(db: Db, afterSeq: number, limit: number): Promise<FingerprintEntry[]> {
  return (await changedRowsSince<FingerprintRow>(db, afterSeq, limit)).map(decodeEntry)
}

/**
 * Apply decisions in one transaction (all or none); older ones than the local decision are
 * skipped, unknown fingerprints get an entry. `cursor`, when given, is stored in the same
 * transaction; `authoritative` (a resync) lets the answer replace verdicts pulled earlier.
 * Returns how many entries changed.
 */
export function applyDecisions(
  db: Kysely<DB>,
  decisions: readonly PulledDecision[],
  now: string,
  cursor?: { key: string; value: string },
  authoritative = false,
): Promise<number> {
  return applyGateDecisions(db, decisions, now, cursor, undefined, authoritative)
}
