/**
 * Retention: delete every row older than a cutoff a batch at a time, each batch its own
 * statement, with a turn of the event loop between. One `DELETE` of a backlog (the first pass
 * after an outage, a lowered retention) holds the write lock for as long as it runs, and on
 * SQLite the process's only thread with it: every request waits. Batches bound that wait.
 */
import { type QueryExecutorProvider, sql } from 'kysely'

/** Rows per statement: tens of milliseconds of work on SQLite. */
const BATCH = 2000

/**
 * Delete the rows of `table` whose `column` is below `before`; how many went. Each batch is a
 * range of the column's index (the `batch + 1`-th oldest value and everything up to it, ties
 * included), so it costs what the one big statement costs per row. `column` needs an index; a
 * text column (an ISO time) works as well as a number.
 *
 * @example const removed = await deleteBefore(db, 'signals', 'observed_ms', cutoffMs)
 */
export async function deleteBefore(
  db: QueryExecutorProvider,
  table: string,
  column: string,
  before: number | string,
  batch = BATCH,
): Promise<number> {
  const t = sql.table(table)
  const c = sql.ref(column)
  let total = 0
  for (;;) {
    const edge = await sql<{ edge: number | string }>`select ${c} as edge from ${t} where ${c} < ${before}
      order by ${c} limit 1 offset ${batch}`.execute(db)
    const upTo = edge.rows[0]?.edge
    if (upTo === undefined) {
      // Fewer than a batch left, most runs none: a read first, so a run with nothing due writes
      // nothing (a database turned read-only refuses even a delete that matches no row).
      const due = await sql`select 1 as due from ${t} where ${c} < ${before} limit 1`.execute(db)
      if (due.rows.length === 0) return total
    }
    const statement =
      upTo === undefined ? sql`delete from ${t} where ${c} < ${before}` : sql`delete from ${t} where ${c} <= ${upTo}`
    total += Number((await statement.execute(db)).numAffectedRows ?? 0)
    if (upTo === undefined) return total
    await new Promise((resolve) => setImmediate(resolve))
  }
}

/**
 * The smallest `id` whose `column` is at or after `from` (undefined: none), for an append-only
 * log whose ids grow with that column and which has no index on it (a text time, say): the
 * walk goes from the oldest id, so it reads only the rows before the answer, the ones a
 * retention is about to remove. Then `deleteBefore(db, table, 'id', answer)`.
 *
 * @example const keepFrom = await firstIdFrom(db, 'audit_events', 'at', cutoff.toISOString())
 */
export async function firstIdFrom(
  db: QueryExecutorProvider,
  table: string,
  column: string,
  from: string | number,
): Promise<number | undefined> {
  const r = await sql<{ id: number | string }>`select id from ${sql.table(table)} where ${sql.ref(column)} >= ${from}
    order by id limit 1`.execute(db)
  const id = r.rows[0]?.id
  return id === undefined ? undefined : Number(id)
}
