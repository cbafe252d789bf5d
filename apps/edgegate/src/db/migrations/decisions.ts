/**
 * Decisions after the first schema: tombstones, the time and expiry indexes, the purge mark. Each
 * keeps its number; ../migrations.ts lists them in order.
 */
import type { Migration } from '@gatehouse/kit'
import { type Kysely, sql } from 'kysely'

/**
 * Decision tombstones: a deleted decision keeps its row with `deleted = 1` (served to gates as
 * an explicit `pending`, hidden from administration), so gates that pulled the old verdict
 * drop it. Forward only.
 */
export const m0002: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .alterTable('decisions')
      .addColumn('deleted', 'integer', (c) => c.notNull().defaultTo(0))
      .execute()
  },
}

/**
 * Decisions by time: the dashboard and `GET /api/decisions` list the newest first across every
 * gate (by verdict or source too); the policy's index leads with the gate. At 200,000 decisions a
 * page sorted them all: 150-200 ms of SQLite's server per dashboard view. `deleted` leads, not
 * the scope type: SQLite's planner, without statistics, took a (scope type, deleted, time) index
 * for one gate's list over the policy's index, walking every gate's decisions. It still prefers
 * this one to the primary key for a lookup of many fingerprints by `IN` that also tests
 * `deleted`, so those lookups test `deleted` in JavaScript (`decisionsFor`).
 */
export const m0012: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.createIndex('decisions_live_by_time').on('decisions').columns(['deleted', 'updated_us']).execute()
  },
}

/**
 * The purge mark of deleted decisions: tombstones tell gates to drop a verdict, so they were
 * kept forever. Retention now removes those older than `--deleted-decision-retention` and
 * records here the newest time it removed, in the same transaction: a gate whose cursor is
 * older may have missed one, and is told to pull its whole policy again (policy/routes.ts).
 */
export const m0013: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .alterTable('decision_clock')
      .addColumn('purged_us', 'bigint', (c) => c.notNull().defaultTo(0))
      .execute()
  },
}

/**
 * Expiring decisions by expiry: the sweep that ends manual ones (decisions/expiry.ts) reads
 * those due every ten seconds. Partial: only rows with an expiry, a small part of the table,
 * and no other query names the column in its conditions, so no plan changes.
 */
export const m0014: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`create index decisions_expiring on decisions (expires_ms) where expires_ms is not null`.execute(db)
  },
}
