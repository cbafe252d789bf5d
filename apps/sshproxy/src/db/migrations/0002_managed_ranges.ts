import type { Kysely } from 'kysely'

/** Bypass ranges the control plane manages (its `trusted_ranges`); static ones live in the config. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('managed_ranges')
    .addColumn('cidr', 'text', (c) => c.primaryKey())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('managed_ranges').execute()
}
