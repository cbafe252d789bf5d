/**
 * Store functions for the control-plane sync (issue 4): read entries changed since the last
 * acknowledged upload, keep small cursors, and apply pulled decisions atomically.
 */
import { parseTimestampMicros } from '@gatehouse/kit/timestamps.ts'
import type { Kysely } from 'kysely'
import type { DB, Verdict } from '../db/schema.ts'
import { type Db, decodeEntry, type FingerprintEntry } from './store.ts'

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

export async function getSyncState(db: Db, key: string): Promise<string | undefined> {
  const row = await db.selectFrom('sync_state').select('value').where('key', '=', key).executeTakeFirst()
  return row?.value
}

export async function setSyncState(db: Db, key: string, value: string, now: string): Promise<void> {
  await db
    .insertInto('sync_state')
    .values({ key, value, updated_at: now })
    .onConflict((oc) => oc.column('key').doUpdateSet({ value, updated_at: now }))
    .execute()
}

/**
 * Microseconds since the epoch of an RFC 3339 time. The control plane writes 6 fraction
 * digits and the gate 3, so the text does not sort (`.123456Z` < `.123Z`); the parsed time does.
 * NaN for text that is not a time.
 */
export function timeMicros(text: string): number {
  return parseTimestampMicros(text) ?? Number.NaN
}

/** -1, 0 or 1 as `a` is before, equal to or after `b`; text that is not a time sorts first. */
export function compareTimes(a: string, b: string): number {
  const [x, y] = [timeMicros(a), timeMicros(b)]
  if (Number.isNaN(x) || Number.isNaN(y)) return Number.isNaN(x) ? (Number.isNaN(y) ? 0 : -1) : 1
  return x < y ? -1 : x > y ? 1 : 0
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
