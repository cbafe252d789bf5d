/**
 * Fingerprint aggregates: PostgreSQL's lz4 compression, the last-seen index. Each keeps its
 * number; ../migrations.ts lists them in order.
 */
import type { DatabaseKind, Migration } from '@gatehouse/kit'
import { type Kysely, sql } from 'kysely'

/**
 * PostgreSQL: a fingerprint's sightings and addresses, about 10 kB once a busy fingerprint holds
 * 128 of each, are compressed with lz4 instead of PostgreSQL's default pglz: every upload rewrites
 * them, and pglz was a third of PostgreSQL's CPU per merged observation (docs/performance/
 * edgegate.md, "Busy fingerprints"). Values are recompressed as they are rewritten. A server
 * built without lz4 (or older than 14) keeps pglz. SQLite: nothing to do.
 */
export function m0007(kind: DatabaseKind): Migration {
  return {
    async up(db: Kysely<unknown>) {
      if (kind !== 'postgres') return
      const { rows } = await sql<{ lz4: boolean }>`select 'lz4' = any(enumvals) as lz4 from pg_settings
        where name = 'default_toast_compression'`.execute(db)
      if (!rows[0]?.lz4) return
      await sql`alter table fingerprints alter column sightings set compression lz4,
        alter column ips set compression lz4`.execute(db)
    },
  }
}

/**
 * Fingerprint aggregates by last seen: the dashboard, `GET /api/fingerprints` and `fingerprint
 * list` read them most recently seen first, a page at a time. Without an index each page sorted
 * the whole table: at 500,000 aggregates (five nodes at the default `--max-fingerprints`) 0.5 to
 * 1.2 s a page, for which SQLite's server answered nobody else. SQLite also gets one by node and
 * time: its planner, without statistics, takes the node's primary-key range and sorts it. Not on
 * PostgreSQL: there the merge's generic lock plan, made on an empty table, would pick that index
 * over the primary key (it matches the node as well) and filter the fingerprint row by row; its
 * planner, with statistics, finds a node's most recently seen without it.
 */
export const m0011 = (kind: DatabaseKind): Migration => ({
  async up(db: Kysely<unknown>) {
    await db.schema.createIndex('fingerprints_last_seen').on('fingerprints').column('last_seen_ms').execute()
    if (kind === 'sqlite') {
      await db.schema
        .createIndex('fingerprints_node_last_seen')
        .on('fingerprints')
        .columns(['instance_id', 'last_seen_ms'])
        .execute()
    }
  },
})
