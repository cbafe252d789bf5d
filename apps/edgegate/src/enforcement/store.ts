/** SQL of the web enforcement controller: shared state, the controller lock, automated decisions. */
import { type DatabaseKind, sql } from '@gatehouse/kit/db/database.ts'
import type { Kysely, Transaction } from 'kysely'
import type { DB, DecisionRow } from '../db/schema.ts'
import { SCOPE_INSTANCE } from '../decisions/store.ts'
import { AUTOMATED_SOURCE, CONTROLLER_ACTOR } from '../web/candidates.ts'

type Db = Kysely<DB> | Transaction<DB>

/** PostgreSQL advisory lock key of the controller ("edgewebc"). */
export const CONTROLLER_LOCK_KEY = 0x6564676577656263n

export async function readState(db: Db) {
  const row = await db.selectFrom('web_enforcement_state').selectAll().where('id', '=', 1).executeTakeFirstOrThrow()
  return { killSwitch: Number(row.kill_switch) === 1, actor: row.actor, updatedMs: Number(row.updated_ms) }
}

export async function writeState(db: Db, killSwitch: boolean, actor: string, nowMs: number) {
  await db
    .updateTable('web_enforcement_state')
    .set({ kill_switch: killSwitch ? 1 : 0, actor, updated_ms: nowMs })
    .where('id', '=', 1)
    .execute()
}

/**
 * Run `fn` as the only controller, or return false without running it when another holds the
 * lock. PostgreSQL: `pg_try_advisory_lock` on one connection taken from the pool for the whole
 * pass (`fn` gets that connection); the lock goes with an explicit unlock, or with the
 * connection when the process dies. SQLite: no lock to take (one process serves a file; the
 * batches' own checks keep the rules even if two processes interleave), and `fn` gets `db`
 * itself, so other requests share its one connection between the pass's statements.
 */
export async function withControllerLock(
  db: Kysely<DB>,
  kind: DatabaseKind,
  fn: (conn: Kysely<DB>) => Promise<void>,
): Promise<boolean> {
  if (kind !== 'postgres') {
    await fn(db)
    return true
  }
  const key = sql.lit(CONTROLLER_LOCK_KEY.toString())
  return db.connection().execute(async (conn) => {
    const r = await sql<{ locked: boolean }>`select pg_try_advisory_lock(${key}::bigint) as locked`.execute(conn)
    if (r.rows[0]?.locked !== true) return false
    try {
      await fn(conn)
      return true
    } finally {
      await sql`select pg_advisory_unlock(${key}::bigint)`.execute(conn)
    }
  })
}

/**
 * Hold the decision clock's row lock until commit: every decision write ticks the clock first,
 * so no manual decision can be written between the controller's read and its write.
 */
export async function lockDecisionClock(trx: Transaction<DB>, kind: DatabaseKind) {
  if (kind === 'postgres') await sql`select last_us from decision_clock where id = 1 for update`.execute(trx)
}

/** What a pass and the kill switch need of a live automated block (not its evidence). */
export type AutomatedBlock = Pick<DecisionRow, 'scope_id' | 'fingerprint' | 'expires_ms' | 'updated_us'>

/** Rows per page of the reads a pass makes (each page one short statement). */
const READ_PAGE = 5000

/**
 * Live automated blocks (the ones gates hold), every gate, read in pages by primary key so no
 * single statement holds SQLite's one connection (and Node's event loop) for long.
 */
export async function automatedBlocks(db: Db, pageSize = READ_PAGE): Promise<AutomatedBlock[]> {
  const out: AutomatedBlock[] = []
  let after: { scope_id: string; fingerprint: string } | undefined
  for (;;) {
    let q = db
      .selectFrom('decisions')
      .select(['scope_id', 'fingerprint', 'expires_ms', 'updated_us'])
      .where('scope_type', '=', SCOPE_INSTANCE)
      .where('source', '=', AUTOMATED_SOURCE)
      .where('status', '=', 'blocked')
      .where('deleted', '=', 0)
    if (after) {
      const a = after
      q = q.where((eb) =>
        eb.or([
          eb('scope_id', '>', a.scope_id),
          eb.and([eb('scope_id', '=', a.scope_id), eb('fingerprint', '>', a.fingerprint)]),
        ]),
      )
    }
    const page = await q.orderBy('scope_id').orderBy('fingerprint').limit(pageSize).execute()
    out.push(...page)
    if (page.length < pageSize) return out
    after = page[page.length - 1]!
  }
}

/** Live automated blocks per gate (a count, for status displays). */
export async function automatedBlockCounts(db: Db): Promise<Map<string, number>> {
  const rows = await db
    .selectFrom('decisions')
    .select(['scope_id', (eb) => eb.fn.countAll<number>().as('n')])
    .where('source', '=', AUTOMATED_SOURCE)
    .where('status', '=', 'blocked')
    .where('deleted', '=', 0)
    .groupBy('scope_id')
    .orderBy('scope_id')
    .execute()
  return new Map(rows.map((r) => [r.scope_id, Number(r.n)]))
}

/** Rows per batched statement (at most 10 parameters each: well under both dialects' limits). */
export const WRITE_CHUNK = 500

export interface Revocation {
  scope_id: string
  fingerprint: string
  atUs: number
  label: string
}

/**
 * Revoke automated blocks, one statement per call: each becomes a tombstone (pending, served to
 * gates, absent for administration) at its own clock time, keeping source and evidence so a
 * later pass can tell whether newer evidence exists. The caller read each row as a live
 * automated block in this transaction, under the decision clock's lock (no other decision write
 * can interleave), so rows are matched by primary key only (one statement per row, with the
 * source predicate, was planned through the source index on PostgreSQL: 50 s for 20k).
 */
export async function revokeBlocks(db: Db, items: Revocation[]): Promise<number> {
  if (items.length === 0) return 0
  const values = sql.join(items.map((i) => sql`(${i.scope_id}, ${i.fingerprint}, ${String(i.atUs)}, ${i.label})`))
  const r = await sql`with v (scope_id, fingerprint, at_us, label) as (values ${values})
update decisions set status = 'pending', label = v.label, updated_us = cast(v.at_us as bigint),
  actor = ${CONTROLLER_ACTOR}, expires_ms = null, deleted = 1
from v
where decisions.scope_type = ${SCOPE_INSTANCE} and decisions.scope_id = v.scope_id and decisions.fingerprint = v.fingerprint`.execute(
    db,
  )
  return Number(r.numAffectedRows ?? 0)
}
