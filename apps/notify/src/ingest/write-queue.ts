/**
 * Group commit, on both databases. Deliveries that arrive while the previous batch is being
 * written are inserted together, in one transaction; each delivery's promise resolves only
 * after that transaction committed, so a 2xx still means the notification is stored.
 *
 * If the batch fails (a row violating a constraint), it is rolled back and every row is
 * inserted on its own, so one bad row fails only its own delivery.
 *
 * SQLite (one writer; each autocommitted insert writes its own pages to the WAL): the batch
 * is the deliveries of one event-loop turn, inserted by a kit prepared query inside the kit's
 * `transactionSync`, synchronously from BEGIN to COMMIT.
 *
 * PostgreSQL: one multi-row statement per batch (`unnest` of one array per column), a single
 * round trip and commit instead of one per delivery. At most PG_IN_FLIGHT batches are on the
 * wire at once; deliveries arriving meanwhile wait for the next one, so under load a batch
 * holds everything that arrived during the previous round trip.
 */
import type { Database, PreparedQuery } from '@gatehouse/kit'
import { CompiledQuery } from 'kysely'
import type { DB, NewNotification } from '../db/schema.ts'
import { STREAM_LOCK_NOTIFICATIONS, STREAM_PG_CHANNEL } from '../realtime/changes.ts'

interface Pending {
  row: NewNotification
  resolve(id: number): void
  reject(err: unknown): void
}

/** Most rows per transaction (more wait for the next turn). */
const MAX_BATCH = 256
/** PostgreSQL: batches written at once (their inserts serialise on the stream-order lock anyway). */
const PG_IN_FLIGHT = 2

/** Insert columns, in the order of the prepared statement's parameters. */
const COLUMNS = [
  'channel',
  'webhook_id',
  'kind',
  'title',
  'body',
  'source',
  'username',
  'severity',
  'state',
  'content',
  'search_text',
  'created_at',
] as const satisfies ReadonlyArray<keyof NewNotification>

/** The row's values in COLUMNS order. */
function values(row: NewNotification): Array<string | null> {
  return [
    row.channel,
    row.webhook_id ?? null,
    row.kind,
    row.title,
    row.body,
    row.source ?? null,
    row.username ?? null,
    row.severity,
    row.state,
    row.content,
    row.search_text,
    row.created_at,
  ]
}

/** Insert a row with the prepared insert (or its transaction-bound form); its id. */
async function insertRow(insert: PreparedQuery<{ id: number }>, row: NewNotification): Promise<number> {
  return Number((await insert.first(...values(row)))!.id)
}

/** The insert as a kit prepared query: parameters in COLUMNS order (see `values`). */
function prepareInsert(database: Database<DB>): PreparedQuery<{ id: number }> {
  if (database.kind === 'postgres') return database.prepare({ compile: () => pgOrderedInsert() })
  const example = Object.fromEntries(COLUMNS.map((c) => [c, ''])) as unknown as NewNotification
  return database.prepare(database.db.insertInto('notifications').values(example).returning('id'))
}

/**
 * PostgreSQL: the insert under a transaction-scoped advisory lock, so notification ids
 * become visible in id order (the realtime stream resumes by id; see realtime/changes.ts),
 * with a NOTIFY that wakes every process's stream at commit. The lock is taken in the
 * FROM subquery, before the id default is evaluated, and held until the statement commits.
 */
function pgOrderedInsert(): CompiledQuery<{ id: number }> {
  const params = COLUMNS.map((_, i) => `$${i + 1}`).join(', ')
  return CompiledQuery.raw(
    `insert into notifications (${COLUMNS.join(', ')}) select ${params} from ` +
      `(select pg_advisory_xact_lock(${STREAM_LOCK_NOTIFICATIONS}), pg_notify('${STREAM_PG_CHANNEL}', '')) as stream_order ` +
      'returning id',
    COLUMNS.map(() => ''),
  ) as CompiledQuery<{ id: number }>
}

/**
 * PostgreSQL: a batch in one statement, under the same lock and NOTIFY as pgOrderedInsert.
 * Rows are inserted in batch order (`order by` the unnest ordinality), and identity values
 * are drawn as rows leave the sort, after the lock is held: the returned ids, sorted, are
 * the batch's rows in order.
 */
function pgBatchInsert(rows: number): CompiledQuery<{ id: number }> {
  const arrays = COLUMNS.map((_, i) => `$${i + 1}::text[]`).join(', ')
  return CompiledQuery.raw(
    `insert into notifications (${COLUMNS.join(', ')}) select ${COLUMNS.map((c) => `r.${c}`).join(', ')} from ` +
      `(select pg_advisory_xact_lock(${STREAM_LOCK_NOTIFICATIONS}), pg_notify('${STREAM_PG_CHANNEL}', '')) as stream_order, ` +
      `unnest(${arrays}) with ordinality as r(${COLUMNS.join(', ')}, ord) order by r.ord returning id`,
    COLUMNS.map(() => new Array(rows).fill('')),
  ) as CompiledQuery<{ id: number }>
}

/** The batch's values as one array per column (COLUMNS order), for pgBatchInsert. */
function columnArrays(batch: Pending[]): Array<Array<string | null>> {
  const out: Array<Array<string | null>> = COLUMNS.map(() => new Array(batch.length))
  for (let r = 0; r < batch.length; r++) {
    const v = values(batch[r]!.row)
    for (let c = 0; c < v.length; c++) out[c]![r] = v[c]!
  }
  return out
}

export class WriteQueue {
  readonly #database: Database<DB>
  readonly #insert: PreparedQuery<{ id: number }>
  #pending: Pending[] = []
  #scheduled = false
  /** PostgreSQL: batches on the wire. */
  #inFlight = 0
  /** PostgreSQL: the batch statement (its SQL does not depend on the row count). */
  readonly #pgBatch: CompiledQuery<{ id: number }> | undefined

  constructor(database: Database<DB>) {
    this.#database = database
    this.#insert = prepareInsert(database)
    if (database.kind === 'postgres') this.#pgBatch = pgBatchInsert(1)
  }

  /** Insert a notification; resolves with its id once committed. */
  insert(row: NewNotification): Promise<number> {
    return new Promise((resolve, reject) => {
      this.#pending.push({ row, resolve, reject })
      this.#schedule()
    })
  }

  #schedule(): void {
    if (this.#scheduled || this.#pending.length === 0) return
    if (this.#pgBatch && this.#inFlight >= PG_IN_FLIGHT) return // a finishing batch schedules
    this.#scheduled = true
    setImmediate(() => void this.#flush())
  }

  async #flush(): Promise<void> {
    this.#scheduled = false
    const batch = this.#pending.splice(0, MAX_BATCH)
    if (!this.#pgBatch) this.#schedule()
    else {
      this.#inFlight++
      try {
        await this.#write(batch)
      } finally {
        this.#inFlight--
        this.#schedule()
      }
      return
    }
    await this.#write(batch)
  }

  async #write(batch: Pending[]): Promise<void> {
    if (batch.length === 1) return this.#one(batch[0]!)
    let ids: number[]
    try {
      ids = await this.#batch(batch)
    } catch {
      for (const p of batch) await this.#one(p)
      return
    }
    for (let i = 0; i < batch.length; i++) batch[i]!.resolve(ids[i]!)
  }

  /** All rows in one transaction; rejects (after rolling back) if any fails. */
  async #batch(batch: Pending[]): Promise<number[]> {
    const insert = this.#insert
    const { transactionSync } = this.#database
    if (transactionSync)
      return transactionSync((tx) => batch.map((p) => Number(tx.first(insert, ...values(p.row))!.id)))
    if (this.#pgBatch) {
      const result = await this.#database.db.executeQuery<{ id: number | string }>(
        CompiledQuery.raw(this.#pgBatch.sql, columnArrays(batch)),
      )
      const ids = result.rows.map((r) => Number(r.id)).sort((a, b) => a - b)
      if (ids.length !== batch.length)
        throw new Error(`batch insert returned ${ids.length} ids for ${batch.length} rows`)
      return ids
    }
    return this.#database.db.transaction().execute(async (trx) => {
      const inTx = insert.in(trx)
      const out: number[] = []
      for (const p of batch) out.push(await insertRow(inTx, p.row))
      return out
    })
  }

  async #one(p: Pending): Promise<void> {
    try {
      p.resolve(await insertRow(this.#insert, p.row))
    } catch (err) {
      p.reject(err)
    }
  }
}

/** How deliveries are stored: through the group-commit queue (both databases). */
export function notificationWriter(database: Database<DB>): (row: NewNotification) => Promise<number> {
  const queue = new WriteQueue(database)
  return (row) => queue.insert(row)
}
