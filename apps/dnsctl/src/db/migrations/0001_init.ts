import type { Kysely, Migration } from 'kysely'

export const init: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('zones')
      .addColumn('name', 'text', (c) => c.primaryKey())
      .addColumn('role', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute()
    await db.schema
      .createTable('zone_history')
      .addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
      .addColumn('zone', 'text', (c) => c.notNull())
      .addColumn('revision', 'text', (c) => c.notNull())
      .addColumn('role', 'text', (c) => c.notNull())
      .addColumn('serial', 'bigint', (c) => c.notNull())
      .addColumn('zone_text', 'text', (c) => c.notNull())
      .addColumn('saved_at', 'text', (c) => c.notNull())
      .addColumn('request_id', 'text', (c) => c.notNull())
      .addColumn('reason', 'text', (c) => c.notNull())
      .execute()
    await db.schema.createIndex('zone_history_zone').on('zone_history').columns(['zone', 'id']).execute()
    await db.schema
      .createTable('audit_events')
      .addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
      .addColumn('at', 'text', (c) => c.notNull())
      .addColumn('zone', 'text', (c) => c.notNull())
      .addColumn('action', 'text', (c) => c.notNull())
      .addColumn('actor', 'text', (c) => c.notNull())
      .addColumn('request_id', 'text', (c) => c.notNull())
      .addColumn('before_revision', 'text')
      .addColumn('after_revision', 'text')
      .addColumn('outcome', 'text', (c) => c.notNull())
      .addColumn('detail', 'text', (c) => c.notNull())
      .execute()
    await db.schema.createIndex('audit_events_zone').on('audit_events').columns(['zone', 'id']).execute()
    await db.schema.createIndex('audit_events_request').on('audit_events').column('request_id').execute()
  },
}
