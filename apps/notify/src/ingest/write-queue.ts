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
 * PostgreSQL: one multi-row statement per batch (`unnest` of one joined text per column, see
 * pgBatchInsert), a single round trip and commit instead of one per delivery. At most
 * PG_IN_FLIGHT batches are on the wire at once; deliveries arriving meanwhile wait for the
 * next one, so under load a batch holds everything that arrived during the previous round trip.
 */
import type { AppMetrics, Database, PreparedQuery } from '@gatehouse/kit'
import { GroupCommitQueue } from '@gatehouse/kit/db/group-commit.ts'
import { serverPrepared } from '@gatehouse/kit/db/pg-prepared.ts'
import { CompiledQuery } from 'kysely'
import type { DB, NewNotification } from '../db/schema.ts'
import { STREAM_LOCK_NOTIFICATIONS, STREAM_PG_CHANNEL } from '../realtime/changes.ts'

/** Most rows per transaction (more wait for the next turn). */
const MAX_BATCH = 256
/** Histogram buckets of deliveries per transaction, up to MAX_BATCH. */
const GROUP_SIZE_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256]
/** PostgreSQL: batches written at once (their inserts serialise on the stream-order lock anyway). */
const PG_IN_FLIGHT = 2

/** Insert columns, in the order of the prepared statement's parameters (also the bench's floor). */
export const NOTIFICATION_COLUMNS = [
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
const COLUMNS = NOTIFICATION_COLUMNS

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
 *
 * Each column comes as one text parameter, every value preceded by U+0001 and split back by
 * `string_to_array` (its leading empty element dropped), a NULL written as U+0002 alone. As
 * `text[]` parameters node-postgres escaped every quote and backslash of every value (the
 * stored card is JSON, full of quotes) and PostgreSQL's array parser undid it: both sides'
 * CPU per row (docs/performance/notify.md). A batch holding a value with U+0001, or exactly
 * U+0002, goes as `text[]` arrays instead (`textArrays`).
 */
function pgBatchInsert(arrays: (i: number) => string): CompiledQuery<{ id: number }> {
  return CompiledQuery.raw(
    `insert into notifications (${COLUMNS.join(', ')}) select ${COLUMNS.map((c) => `r.${c}`).join(', ')} from ` +
      `(select pg_advisory_xact_lock(${STREAM_LOCK_NOTIFICATIONS}), pg_notify('${STREAM_PG_CHANNEL}', '')) as stream_order, ` +
      `unnest(${COLUMNS.map((_, i) => arrays(i + 1)).join(', ')}) with ordinality as r(${COLUMNS.join(', ')}, ord) order by r.ord returning id`,
    [],
  ) as CompiledQuery<{ id: number }>
}
// One fixed text each whatever the batch size, so each runs as a prepared statement (the kit's
// `serverPrepared`): parsed and planned once per connection, not for every batch.
const PG_BATCH_JOINED = serverPrepared(pgBatchInsert((i) => `(string_to_array($${i}, chr(1), chr(2)))[2:]`).sql)
const PG_BATCH_ARRAYS = serverPrepared(pgBatchInsert((i) => `$${i}::text[]`).sql)

const SEPARATOR = '\u0001'
const NULL_MARK = '\u0002'

/** The batch's values as one joined text per column (COLUMNS order), or undefined if one cannot be. */
function joinedColumns(batch: NewNotification[]): string[] | undefined {
  const out = COLUMNS.map(() => '')
  for (const row of batch) {
    const v = values(row)
    for (let c = 0; c < v.length; c++) {
      const x = v[c] as string | null
      if (x === null) out[c] += SEPARATOR + NULL_MARK
      else if (x.includes(SEPARATOR) || x === NULL_MARK) return undefined
      else out[c] += SEPARATOR + x
    }
  }
  return out
}

/** The batch's values as one array per column (COLUMNS order). */
function textArrays(batch: NewNotification[]): Array<Array<string | null>> {
  const out: Array<Array<string | null>> = COLUMNS.map(() => new Array(batch.length))
  for (let r = 0; r < batch.length; r++) {
    const v = values(batch[r]!)
    for (let c = 0; c < v.length; c++) out[c]![r] = v[c]!
  }
  return out
}

/** The batch statement with its parameters. */
function pgBatch(rows: NewNotification[]): CompiledQuery<{ id: number | string }> {
  const joined = joinedColumns(rows)
  return joined ? CompiledQuery.raw(PG_BATCH_JOINED, joined) : CompiledQuery.raw(PG_BATCH_ARRAYS, textArrays(rows))
}

/** All rows in one transaction, their ids in order; throws (having rolled back) if any fails. */
async function insertGroup(
  database: Database<DB>,
  insert: PreparedQuery<{ id: number }>,
  rows: NewNotification[],
): Promise<number[]> {
  const { transactionSync } = database
  if (transactionSync) return transactionSync((tx) => rows.map((row) => Number(tx.first(insert, ...values(row))!.id)))
  if (database.kind === 'postgres') {
    const result = await database.db.executeQuery(pgBatch(rows))
    const ids = result.rows.map((r) => Number(r.id)).sort((a, b) => a - b)
    if (ids.length !== rows.length) throw new Error(`batch insert returned ${ids.length} ids for ${rows.length} rows`)
    return ids
  }
  return database.db.transaction().execute(async (trx) => {
    const inTx = insert.in(trx)
    const out: number[] = []
    for (const row of rows) out.push(await insertRow(inTx, row))
    return out
  })
}

/** The kit's group-commit queue with notify's inserts (see the top of this file). */
export class WriteQueue {
  readonly #queue: GroupCommitQueue<NewNotification, number>

  constructor(database: Database<DB>, metrics?: AppMetrics) {
    const insert = prepareInsert(database)
    const sizes = metrics?.histogram(
      'delivery_group_size',
      'Deliveries stored per transaction (group commit)',
      [],
      GROUP_SIZE_BUCKETS,
    )
    this.#queue = new GroupCommitQueue({
      maxGroup: MAX_BATCH,
      maxInFlight: database.kind === 'postgres' ? PG_IN_FLIGHT : 1,
      commitGroup: (rows) => insertGroup(database, insert, rows),
      commitOne: (row) => insertRow(insert, row),
      ...(sizes ? { onGroup: (size: number) => sizes.observe(size) } : {}),
    })
  }

  /** Insert a notification; resolves with its id once committed. */
  insert(row: NewNotification): Promise<number> {
    return this.#queue.add(row)
  }
}

/** How deliveries are stored: through the group-commit queue (both databases). */
export function notificationWriter(
  database: Database<DB>,
  metrics?: AppMetrics,
): (row: NewNotification) => Promise<number> {
  const queue = new WriteQueue(database, metrics)
  return (row) => queue.insert(row)
}
