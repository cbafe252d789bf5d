import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('fingerprints')
    .addColumn('fingerprint', 'text', (c) => c.primaryKey())
    .addColumn('verdict', 'text', (c) => c.notNull().check(sql`verdict in ('approved', 'blocked', 'pending')`))
    .addColumn('decided_at', 'text')
    .addColumn('actor', 'text')
    .addColumn('expires_at', 'text')
    .addColumn('label', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('refused_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('first_seen', 'text', (c) => c.notNull())
    .addColumn('last_seen', 'text', (c) => c.notNull())
    .addColumn('metadata', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('ips', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('ports', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('sightings', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('change_seq', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('changed_at', 'text', (c) => c.notNull())
    .execute()
  // Pruning takes the oldest non-approved entries first; sync reads by change sequence.
  await db.schema.createIndex('fingerprints_prune').on('fingerprints').columns(['verdict', 'last_seen']).execute()
  await db.schema.createIndex('fingerprints_change_seq').on('fingerprints').column('change_seq').execute()
  await db.schema
    .createTable('change_counter')
    .addColumn('id', 'integer', (c) => c.primaryKey().check(sql`id = 1`))
    .addColumn('value', 'integer', (c) => c.notNull())
    .execute()
  await sql`insert into change_counter (id, value) values (1, 0)`.execute(db)
  await db.schema
    .createTable('sync_state')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema
    .createTable('managed_ranges')
    .addColumn('cidr', 'text', (c) => c.primaryKey())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const t of ['managed_ranges', 'sync_state', 'change_counter', 'fingerprints'])
    await db.schema.dropTable(t).execute()
}
