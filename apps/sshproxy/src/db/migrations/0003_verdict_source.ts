import { addVerdictSource } from '@gatehouse/kit/gate-store.ts'
import type { Kysely } from 'kysely'

/**
 * Where each verdict came from (`pulled`), so a resync after the control plane's database went
 * back in time drops only verdicts pulled from it (kit gate-store.ts).
 */
export const up = (db: Kysely<unknown>): Promise<void> => addVerdictSource(db)

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('fingerprints').dropColumn('pulled').execute()
}
