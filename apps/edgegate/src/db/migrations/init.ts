/**
 * The first schema: nodes, administrators and sessions, fingerprints, decisions, signals, SMTP
 * reports, the audit log. Each keeps its number; ../migrations.ts lists them in order.
 */
import type { Migration } from '@gatehouse/kit'
import { type Kysely, sql } from 'kysely'

export const m0001: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('nodes')
      .addColumn('instance_id', 'text', (c) => c.primaryKey())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('active', 'integer', (c) => c.notNull())
      .addColumn('token_hash', 'text', (c) => c.unique())
      .addColumn('cert_name', 'text')
      .addColumn('cert_fingerprint', 'text', (c) => c.unique())
      .addColumn('created_ms', 'bigint', (c) => c.notNull())
      .addColumn('updated_ms', 'bigint', (c) => c.notNull())
      .addColumn('last_seen_ms', 'bigint')
      .execute()
    await db.schema.createIndex('nodes_cert_name').on('nodes').column('cert_name').execute()

    await db.schema
      .createTable('admins')
      .addColumn('name', 'text', (c) => c.primaryKey())
      .addColumn('token_hash', 'text', (c) => c.notNull().unique())
      .addColumn('created_ms', 'bigint', (c) => c.notNull())
      .addColumn('last_used_ms', 'bigint')
      .execute()
    await db.schema
      .createTable('sessions')
      .addColumn('id_hash', 'text', (c) => c.primaryKey())
      .addColumn('admin_name', 'text', (c) => c.notNull().references('admins.name').onDelete('cascade'))
      .addColumn('created_ms', 'bigint', (c) => c.notNull())
      .addColumn('expires_ms', 'bigint', (c) => c.notNull())
      .execute()

    await db.schema
      .createTable('fingerprints')
      .addColumn('instance_id', 'text', (c) => c.notNull())
      .addColumn('fingerprint', 'text', (c) => c.notNull())
      .addColumn('reported_status', 'text', (c) => c.notNull())
      .addColumn('first_seen_ms', 'bigint', (c) => c.notNull())
      .addColumn('last_seen_ms', 'bigint', (c) => c.notNull())
      .addColumn('count', 'bigint', (c) => c.notNull())
      .addColumn('ips', 'text', (c) => c.notNull())
      .addColumn('ports', 'text', (c) => c.notNull())
      .addColumn('sightings', 'text', (c) => c.notNull())
      .addColumn('oldest_sighting_ms', 'bigint')
      .addColumn('metadata', 'text', (c) => c.notNull())
      .addColumn('updated_ms', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('fingerprints_pk', ['instance_id', 'fingerprint'])
      .execute()
    await db.schema
      .createIndex('fingerprints_oldest_sighting')
      .on('fingerprints')
      .column('oldest_sighting_ms')
      .execute()

    await db.schema
      .createTable('decisions')
      .addColumn('scope_type', 'text', (c) => c.notNull())
      .addColumn('scope_id', 'text', (c) => c.notNull())
      .addColumn('fingerprint', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('label', 'text', (c) => c.notNull())
      .addColumn('updated_us', 'bigint', (c) => c.notNull())
      .addColumn('actor', 'text', (c) => c.notNull())
      .addColumn('source', 'text', (c) => c.notNull())
      .addColumn('expires_ms', 'bigint')
      .addColumn('evidence', 'text')
      .addPrimaryKeyConstraint('decisions_pk', ['scope_type', 'scope_id', 'fingerprint'])
      .execute()
    await db.schema
      .createIndex('decisions_scope_updated')
      .on('decisions')
      .columns(['scope_type', 'scope_id', 'updated_us'])
      .execute()
    await db.schema
      .createTable('decision_clock')
      .addColumn('id', 'integer', (c) => c.primaryKey())
      .addColumn('last_us', 'bigint', (c) => c.notNull())
      .execute()
    await sql`insert into decision_clock (id, last_us) values (1, 0)`.execute(db)

    await db.schema
      .createTable('signals')
      .addColumn('instance_id', 'text', (c) => c.notNull())
      .addColumn('event_id', 'text', (c) => c.notNull())
      .addColumn('observed_ms', 'bigint', (c) => c.notNull())
      .addColumn('host', 'text', (c) => c.notNull())
      .addColumn('site', 'text', (c) => c.notNull())
      .addColumn('ip', 'text', (c) => c.notNull())
      .addColumn('trigger', 'text', (c) => c.notNull())
      .addColumn('connections', 'bigint', (c) => c.notNull())
      .addColumn('errors', 'bigint', (c) => c.notNull())
      .addColumn('successes', 'bigint', (c) => c.notNull())
      .addColumn('window_seconds', 'integer', (c) => c.notNull())
      .addColumn('received_ms', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('signals_pk', ['instance_id', 'event_id'])
      .execute()
    await db.schema.createIndex('signals_ip_observed').on('signals').columns(['ip', 'observed_ms']).execute()

    await db.schema
      .createTable('smtp_reports')
      .addColumn('instance_id', 'text', (c) => c.notNull())
      .addColumn('namespace', 'text', (c) => c.notNull())
      .addColumn('listener', 'text', (c) => c.notNull())
      .addColumn('replay_id', 'text', (c) => c.notNull())
      .addColumn('generated_ms', 'bigint', (c) => c.notNull())
      .addColumn('body', 'text', (c) => c.notNull())
      .addColumn('received_ms', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('smtp_reports_pk', ['instance_id', 'namespace', 'listener'])
      .execute()

    await db.schema
      .createTable('audit_log')
      .addColumn('at_ms', 'bigint', (c) => c.notNull())
      .addColumn('actor', 'text', (c) => c.notNull())
      .addColumn('action', 'text', (c) => c.notNull())
      .addColumn('target', 'text', (c) => c.notNull())
      .execute()
  },
}
