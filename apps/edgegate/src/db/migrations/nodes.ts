/**
 * Nodes: their client certificate's expiry, and the alerts announced about them. Each keeps its
 * number; ../migrations.ts lists them in order.
 */
import type { Migration } from '@gatehouse/kit'
import type { Kysely } from 'kysely'

/**
 * When each certificate node's client certificate expires, as last presented: edgegate sees
 * every node's certificate, so it can say centrally which ones are about to lock their gates
 * out. Nullable: token nodes have none, and certificate nodes until their next request.
 */
export const m0008: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('nodes').addColumn('cert_expires_ms', 'bigint').execute()
  },
}

/** Node events announced, so several processes on one database alert once (nodes/health.ts). */
export const m0010: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('node_alerts')
      .addColumn('instance_id', 'text', (c) => c.notNull())
      .addColumn('what', 'text', (c) => c.notNull())
      .addColumn('at_ms', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('node_alerts_pk', ['instance_id', 'what'])
      .execute()
  },
}
