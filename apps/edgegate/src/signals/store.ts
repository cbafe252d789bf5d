/** Storing web signals: idempotent by (node, event_id), correlated with the TLS sightings at once. */
import type { DatabaseKind } from '@gatehouse/kit'
import type { Kysely } from 'kysely'
import type { DB, SignalTable } from '../db/schema.ts'
import { networkOf } from '../web/candidates.ts'
import { correlateSignals, lockCorrelation } from '../web/evidence.ts'

/** Rows per insert statement (12 parameters each, well under both dialects' limits). */
const CHUNK = 500

/**
 * Store one node's signals (with their client network) and their matches with the stored sightings (`web_evidence`) in one
 * transaction; returns how many were new (the rest were re-sent event ids).
 */
export async function recordSignals(
  db: Kysely<DB>,
  kind: DatabaseKind,
  node: string,
  signals: ReadonlyArray<Omit<SignalTable, 'network'>>,
): Promise<number> {
  if (signals.length === 0) return 0
  const rows: SignalTable[] = signals.map((s) => ({ ...s, network: networkOf(s.ip) }))
  return db.transaction().execute(async (trx) => {
    let accepted = 0
    for (let i = 0; i < rows.length; i += CHUNK) {
      const r = await trx
        .insertInto('signals')
        .values(rows.slice(i, i + CHUNK))
        .onConflict((oc) => oc.columns(['instance_id', 'event_id']).doNothing())
        .executeTakeFirst()
      accepted += Number(r.numInsertedOrUpdatedRows ?? 0)
    }
    if (accepted > 0) {
      await lockCorrelation(trx, kind)
      await correlateSignals(
        trx,
        node,
        rows.map((r) => r.event_id),
      )
    }
    return accepted
  })
}

/** The newest signals first (the admin API and the dashboard's Signals page). */
export function recentSignals(db: Kysely<DB>, limit: number) {
  return db.selectFrom('signals').selectAll().orderBy('observed_ms', 'desc').limit(limit).execute()
}
