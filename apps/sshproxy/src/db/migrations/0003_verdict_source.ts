import { type Kysely, sql } from 'kysely'

/**
 * Where each verdict came from: 1 pulled from the control plane, 0 the gate's own (or none), so
 * a resync after the control plane's database went back in time drops only pulled ones. Rows
 * already here cannot tell, so they start as the gate's own and the policy cursor is cleared:
 * the next sync pulls every decision again and marks those the control plane holds.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('fingerprints')
    .addColumn('pulled', 'integer', (c) => c.notNull().defaultTo(0))
    .execute()
  await sql`delete from sync_state where key = 'policy_cursor'`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('fingerprints').dropColumn('pulled').execute()
}
