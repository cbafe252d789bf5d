/**
 * Administration: the audit log by time, administrator token expiry. Each keeps its number;
 * ../migrations.ts lists them in order.
 */
import type { Migration } from '@gatehouse/kit'
import type { Kysely } from 'kysely'

/**
 * The audit log by time: `audit list` and the dashboard read it newest first, and the
 * retention sweep deletes from its old end; without an index both scan the whole log.
 */
export const m0009: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.createIndex('audit_log_at').on('audit_log').column('at_ms').execute()
  },
}

/**
 * An administrator token may expire (`edgegate admin add|rotate-token --expires-in`): a token
 * handed to a script or a contractor should not work forever. Null: it never expires, as every
 * token did before.
 */
export const m0015: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('admins').addColumn('expires_ms', 'bigint').execute()
  },
}
