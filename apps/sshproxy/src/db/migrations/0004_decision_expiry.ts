import { POLICY_CURSOR_KEY } from '@gatehouse/kit/gate-store.ts'
import { type Kysely, sql } from 'kysely'

/**
 * A pulled decision's expiry (`expires_at`: an automated block, or a manual decision made for a
 * while), so the gate ends it on time when it cannot reach the control plane. The policy cursor
 * is cleared: the next sync pulls every decision again, with its expiry.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('fingerprints').addColumn('expires_at', 'text').execute()
  await sql`delete from sync_state where key = ${POLICY_CURSOR_KEY}`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('fingerprints').dropColumn('expires_at').execute()
}
