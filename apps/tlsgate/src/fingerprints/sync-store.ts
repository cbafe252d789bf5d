/**
 * Store functions for the control-plane sync: entries changed since the last acknowledged
 * upload, small cursors, and pulled decisions applied atomically with their expiry (kit
 * `applyDecisions`). The SQL is the kit's (packages/kit/src/gate-store.ts), shared with sshproxy.
 */
import { applyDecisions, changedRowsSince, getSyncState, setSyncState } from '@gatehouse/kit/gate-store.ts'
import type { FingerprintRow } from '../db/schema.ts'
import { type Db, decodeEntry, type FingerprintEntry } from './store.ts'

export { applyDecisions, getSyncState, setSyncState }

/** Entries whose `change_seq` is above `afterSeq`, oldest change first (the upload page). */
export async function changedSince(db: Db, afterSeq: number, limit: number): Promise<FingerprintEntry[]> {
  return (await changedRowsSince<FingerprintRow>(db, afterSeq, limit)).map(decodeEntry)
}
