/**
 * Store functions for the control-plane sync (issue 4): entries changed since the last
 * acknowledged upload, small cursors, and pulled decisions applied atomically. The SQL is the
 * kit's (packages/kit/src/gate-store.ts), shared with tlsgate.
 */
import {
  applyDecisions,
  changedRowsSince,
  compareTimes,
  getSyncState,
  type PulledDecision,
  setSyncState,
} from '@gatehouse/kit/gate-store.ts'
import type { FingerprintRow } from '../db/schema.ts'
import { type Db, decodeEntry, type FingerprintEntry } from './store.ts'

/** Pulled decisions are applied in one transaction with their expiry and the cursor (kit). */
export { applyDecisions, compareTimes, getSyncState, type PulledDecision, setSyncState }

/** Entries whose `change_seq` is above `afterSeq`, oldest change first (the upload page). */
export async function changedSince(db: Db, afterSeq: number, limit: number): Promise<FingerprintEntry[]> {
  return (await changedRowsSince<FingerprintRow>(db, afterSeq, limit)).map(decodeEntry)
}
