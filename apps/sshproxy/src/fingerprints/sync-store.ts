/**
 * Store functions for the control-plane sync (issue 4): read entries changed since the last
 * acknowledged upload, keep small cursors, and apply pulled decisions atomically.
 */
import { compareTimes, getSyncState, setSyncState } from '@gatehouse/kit/gate-store.ts'
import type { Kysely } from 'kysely'
import type { DB, Verdict } from '../db/schema.ts'
import { type Db, decodeEntry, type FingerprintEntry } from './store.ts'

/** Sync state and time comparison are the kit's (packages/kit/src/gate-store.ts), shared with tlsgate. */
export { compareTimes, getSyncState, setSyncState }

/** Entries whose `change_seq` is above `afterSeq`, oldest change first (the upload page). */
export async function changedSince(db: Db, afterSeq: number, limit: number): Promise<FingerprintEntry[]> {
  const rows = await db
    .selectFrom('fingerprints')
    .selectAll()
    .where('change_seq', '>', afterSeq)
    .orderBy('change_seq', 'asc')
    .orderBy('fingerprint', 'asc')
    .limit(limit)
    .execute()
  return rows.map(decodeEntry)
}

export interface PulledDecision {
  fingerprint: string
  status: Verdict
  label: string
  updated_at: string
  actor: string
}

/**
 * Apply decisions in one transaction (all or none). A decision older than the local one is
 * skipped (last writer wins by time); unknown fingerprints get an entry with no observations,
 * which periodic pruning bounds. Returns how many entries changed. `cursor`, when given, is
 * stored under `cursorKey` in the same transaction.
 */
export async function applyDecisions(
  db: Kysely<DB>,
  decisions: readonly PulledDecision[],
  now: string,
  cursor?: { key: string; value: string },
): Promise<number> {
  return db.transaction().execute(async (trx) => {
    let changed = 0
    for (const d of decisions) {
      const current = await trx
        .selectFrom('fingerprints')
        .select('decided_at')
        .where('fingerprint', '=', d.fingerprint)
        .executeTakeFirst()
      if (!current) {
        await trx
          .insertInto('fingerprints')
          .values({
            fingerprint: d.fingerprint,
            verdict: d.status,
            decided_at: d.updated_at,
            actor: d.actor,
            label: d.label,
            first_seen: d.updated_at,
            last_seen: d.updated_at,
            changed_at: now,
          })
          .execute()
        changed++
      } else if (current.decided_at === null || compareTimes(current.decided_at, d.updated_at) <= 0) {
        await trx
          .updateTable('fingerprints')
          .set({ verdict: d.status, label: d.label, decided_at: d.updated_at, actor: d.actor })
          .where('fingerprint', '=', d.fingerprint)
          .execute()
        changed++
      }
    }
    if (cursor) await setSyncState(trx, cursor.key, cursor.value, now)
    return changed
  })
}
