/**
 * Store functions for the control-plane sync: entries changed since the last acknowledged
 * upload, small cursors, and pulled decisions applied atomically, with an automated block's
 * expiry. The SQL is the kit's (packages/kit/src/gate-store.ts), shared with sshproxy.
 */
import type { Decision } from '@gatehouse/kit/edge-wire.ts'
import {
  applyDecisions as applyGateDecisions,
  changedRowsSince,
  getSyncState,
  setSyncState,
} from '@gatehouse/kit/gate-store.ts'
import { parseTimestampMicros } from '@gatehouse/kit/timestamps.ts'
import type { Kysely } from 'kysely'
import type { DB, FingerprintRow } from '../db/schema.ts'
import { type Db, decodeEntry, type FingerprintEntry } from './store.ts'

export { getSyncState, setSyncState }

/** Entries whose `change_seq` is above `afterSeq`, oldest change first (the upload page). */
export async function changedSince(db: Db, afterSeq: number, limit: number): Promise<FingerprintEntry[]> {
  return (await changedRowsSince<FingerprintRow>(db, afterSeq, limit)).map(decodeEntry)
}

/** An automated decision's expiry, when the control plane sends one (`expires_at`, RFC 3339). */
function expiryOf(d: Decision): string | null {
  const e = (d as Decision & { expires_at?: unknown }).expires_at
  return typeof e === 'string' && parseTimestampMicros(e) !== undefined ? e : null
}

/**
 * Apply decisions in one transaction (all or none); older ones than the local decision are
 * skipped, unknown fingerprints get an entry, and each carries its expiry (none: a manual or
 * permanent decision). `cursor` is stored in the same transaction.
 */
export function applyDecisions(
  db: Kysely<DB>,
  decisions: readonly Decision[],
  now: string,
  cursor: { key: string; value: string },
  authoritative = false,
): Promise<number> {
  return applyGateDecisions(db, decisions, now, cursor, (d) => ({ expires_at: expiryOf(d) }), authoritative)
}
