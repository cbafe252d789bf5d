import type { Kysely, Migration } from 'kysely'

/**
 * The stored HA role (a promotion outlives restarts and wins over DNSCTL_HA_ROLE), the HA event
 * log (promotions, refused promotions) and the committed revisions of the provider allowlist.
 * Only portable types (text, bigint) and no generated ids, so PostgreSQL can follow unchanged.
 */
export const haAndProvider: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('ha_state')
      .addColumn('id', 'integer', (c) => c.primaryKey())
      .addColumn('role', 'text', (c) => c.notNull())
      .addColumn('epoch', 'bigint', (c) => c.notNull())
      .addColumn('fenced_by_epoch', 'bigint')
      .addColumn('changed_at', 'text', (c) => c.notNull())
      .addColumn('actor', 'text', (c) => c.notNull())
      .addColumn('request_id', 'text', (c) => c.notNull())
      .execute()
    await db.schema
      .createTable('ha_events')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('at', 'text', (c) => c.notNull())
      .addColumn('action', 'text', (c) => c.notNull())
      .addColumn('actor', 'text', (c) => c.notNull())
      .addColumn('request_id', 'text', (c) => c.notNull())
      .addColumn('outcome', 'text', (c) => c.notNull())
      .addColumn('from_role', 'text', (c) => c.notNull())
      .addColumn('to_role', 'text', (c) => c.notNull())
      .addColumn('epoch', 'bigint', (c) => c.notNull())
      .addColumn('detail', 'text', (c) => c.notNull())
      .execute()
    await db.schema.createIndex('ha_events_at').on('ha_events').column('at').execute()
    await db.schema
      .createTable('provider_allowlist')
      .addColumn('seq', 'bigint', (c) => c.primaryKey())
      .addColumn('revision', 'text', (c) => c.notNull().unique())
      .addColumn('zones', 'text', (c) => c.notNull())
      .addColumn('committed_at', 'text', (c) => c.notNull())
      .addColumn('actor', 'text', (c) => c.notNull())
      .addColumn('request_id', 'text', (c) => c.notNull())
      .execute()
  },
}
