/**
 * The database floor of hook ingestion: the rows notify stored, inserted again by a bare
 * batched INSERT from the bench process, with nothing else (no HTTP, no parsing, no hook
 * lookup): what the database itself takes, on the same schema (notify's migrations: the same
 * indexes, triggers and, on PostgreSQL, the trigram index every row updates).
 *
 * Batches of BATCH rows, one transaction each, as many on the wire as notify's write queue
 * allows (SQLite 1: one writer; PostgreSQL 2). BATCH is the number of load connections: with
 * that many closed-loop senders, notify can never group more deliveries than that.
 *
 * Besides the rate, the CPU time per row: the bench process's (SQLite runs in it) plus, on
 * PostgreSQL, the whole server's (`dbCpuSeconds`). On SQLite the search index is not
 * maintained by the insert but by notify's background indexer (inbox/indexer.ts), whose
 * CPU notify's own figure includes; `indexCpuPerRowUs` is that indexer's cost for the
 * floor's rows, measured after the timed loop and reported apart (the floor itself stays
 * the bare INSERT). On PostgreSQL the inserts fill the trigram index's pending list, and the
 * floor ends by merging what is left of it (counted), as notify's indexer would.
 */
import { serverPrepared } from '@gatehouse/kit/db/pg-prepared.ts'
import { CompiledQuery } from 'kysely'
import { openNotifyDatabase } from '../src/db/open.ts'
import { indexAll, mergePendingSearch } from '../src/inbox/indexer.ts'
import { NOTIFICATION_COLUMNS } from '../src/ingest/write-queue.ts'

const COLUMNS = NOTIFICATION_COLUMNS

export interface FloorFigures {
  rowsPerSecond: number
  rows: number
  batch: number
  /** CPU time per row: this process plus, on PostgreSQL, the database server, in µs. */
  cpuPerRowUs: number
  /** SQLite: CPU time per row of indexing the floor's rows in the search index, in µs. */
  indexCpuPerRowUs?: number
}

const cpuSeconds = () => {
  const c = process.cpuUsage()
  return (c.user + c.system) / 1e6
}

/** Insert copies of the newest stored notification for `durationMs`; rows per second. */
export async function ingestFloor(
  url: string,
  batch: number,
  durationMs: number,
  dbCpuSeconds: () => number = () => 0,
): Promise<FloorFigures> {
  // As notify serve opens it: on SQLite the log is checkpointed on a worker thread.
  const database = await openNotifyDatabase(url, undefined, { backgroundCheckpoints: true })
  try {
    const sample = await database.db
      .selectFrom('notifications')
      .select(COLUMNS)
      .orderBy('id', 'desc')
      .limit(1)
      .executeTakeFirstOrThrow()
    const one = COLUMNS.map((c) => sample[c])
    const params = Array.from({ length: batch }, () => one).flat()
    let rows = 0
    // What notify's indexer left when it stopped is not the floor's to index (or merge).
    if (database.sqlite) await indexAll(database)
    else await mergePendingSearch(database.db)
    const cpuBefore = cpuSeconds() + dbCpuSeconds()
    const started = performance.now()
    const deadline = started + durationMs
    if (database.sqlite) {
      const raw = database.sqlite
      const tuple = `(${COLUMNS.map(() => '?').join(', ')})`
      const insert = raw.prepare(
        `insert into notifications (${COLUMNS.join(', ')}) values ${Array.from({ length: batch }, () => tuple).join(', ')}`,
      )
      while (performance.now() < deadline) {
        raw.exec('begin immediate')
        insert.run(...params)
        raw.exec('commit')
        rows += batch
      }
    } else {
      let n = 0
      const tuples = Array.from(
        { length: batch },
        (_, r) => `(${COLUMNS.map((_, c) => `$${r * COLUMNS.length + c + 1}`).join(', ')})`,
      )
      // Prepared (a named statement, parsed and planned once per connection), as notify's own
      // batch insert is since 2026-11-29: the floor is the fastest bare insert, not a slower one.
      const insert = CompiledQuery.raw(
        serverPrepared(`insert into notifications (${COLUMNS.join(', ')}) values ${tuples.join(', ')}`),
        params,
      )
      const loop = async () => {
        while (performance.now() < deadline) {
          await database.db.executeQuery(insert)
          n += batch
        }
      }
      await Promise.all([loop(), loop()])
      // The trigram index's pending list merged, as notify's indexer does: part of the floor.
      await mergePendingSearch(database.db)
      rows = n
    }
    const seconds = (performance.now() - started) / 1000
    const cpuPerRowUs = ((cpuSeconds() + dbCpuSeconds() - cpuBefore) / rows) * 1e6
    const figures: FloorFigures = { rowsPerSecond: rows / seconds, rows, batch, cpuPerRowUs }
    if (database.sqlite) {
      const before = cpuSeconds()
      await indexAll(database)
      figures.indexCpuPerRowUs = ((cpuSeconds() - before) / rows) * 1e6
    }
    return figures
  } finally {
    await database.close()
  }
}
