/**
 * Store functions for the control-plane sync: entries changed since the last acknowledged
 * upload, small cursors, and pulled decisions applied atomically.
 */
import type { Decision } from '@gatehouse/kit/edge-wire.ts'
import { compareTimes, getSyncState, setSyncState } from '@gatehouse/kit/gate-store.ts'
import { parseTimestampMicros } from '@gatehouse/kit/timestamps.ts'
import type { Kysely } from 'kysely'
import type { DB } from '../db/schema.ts'
import { type Db, decodeEntry, type FingerprintEntry } from './store.ts'

export { getSyncState, setSyncState }

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

/** An automated decision's expiry, when the control plane sends one (`expires_at`, RFC 3339). */
function expiryOf(d: Decision): string | null {
  const e = (d as Decision & { expires_at?: unknown }).expires_at
  return typeof e === 'string' && parseTimestampMicros(e) !== undefined ? e : null
}

/**
 * Apply decisions in one transaction (all or none). A decision older than the local one is
 * skipped (last writer wins by time); unknown fingerprints get an entry with no observations,
 * which the entry cap bounds. `cursor` is stored in the same transaction.
 */
export async function applyDecisions(
  db: Kysely<DB>,
  decisions: readonly Decision[],
  now: string,
  cursor: { key: string; value: string },
): Promise<number> {
  return db.transaction().execute(async (trx) => {
    let changed = 0
    for (const d of decisions) {
      const current = await trx
        .selectFrom('fingerprints')
        .select('decided_at')
        .where('fingerprint', '=', d.fingerprint)
        .executeTakeFirst()
      const set = {
        verdict: d.status,
        label: d.label,
        decided_at: d.updated_at,
        actor: d.actor,
        expires_at: expiryOf(d),
      }
      if (!current) {
        await trx
          .insertInto('fingerprints')
          .values({
            fingerprint: d.fingerprint,
            ...set,
            first_seen: d.updated_at,
            last_seen: d.updated_at,
            changed_at: now,
          })
          .execute()
        changed++
      } else if (current.decided_at === null || compareTimes(current.decided_at, d.updated_at) <= 0) {
        await trx.updateTable('fingerprints').set(set).where('fingerprint', '=', d.fingerprint).execute()
        changed++
      }
    }
    await setSyncState(trx, cursor.key, cursor.value, now)
    return changed
  })
}
