import { addExpiryIndex } from '@gatehouse/kit/gate-verdict.ts'
import type { Kysely } from 'kysely'

/**
 * Expiries as UTC ISO text with an index, so the store maintenance finds the decisions that just
 * ended by a range instead of a scan of every entry (kit `markExpiries`).
 */
export const up = (db: Kysely<unknown>): Promise<void> => addExpiryIndex(db)

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('fingerprints_expires_at').execute()
}
