/**
 * SQLite group commit. SQLite has one writer, and each autocommitted insert writes its
 * own pages to the WAL; deliveries that arrive in the same event-loop turn are instead
 * inserted in one transaction. Each delivery's promise resolves only after that
 * transaction committed, so a 2xx still means the notification is stored.
 *
 * If the batch fails (a row violating a constraint), it is rolled back and every row is
 * inserted on its own, so one bad row fails only its own delivery.
 *
 * The insert is a kit prepared query. On SQLite a batch runs in the kit's `transactionSync`:
 * synchronously from BEGIN to COMMIT, once no Kysely transaction holds the connection. The
 * queue also works on PostgreSQL (a Kysely transaction per batch), though it is used there
 * only by tests: PostgreSQL takes concurrent inserts itself.
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

export class WriteQueue {
  readonly #database: Database<DB>
  readonly #insert: PreparedQuery<{ id: number }>
  #pending: Pending[] = []
  #scheduled = false

  constructor(database: Database<DB>) {
    this.#database = database
    this.#insert = prepareInsert(database)
  }

  /** Insert a notification; resolves with its id once committed. */
  insert(row: NewNotification): Promise<number> {
    return new Promise((resolve, reject) => {
      this.#pending.push({ row, resolve, reject })
      if (!this.#scheduled) {
        this.#scheduled = true
        setImmediate(() => void this.#flush())
      }
    })
  }

  async #flush(): Promise<void> {
    const batch = this.#pending.splice(0, MAX_BATCH)
    if (this.#pending.length > 0) setImmediate(() => void this.#flush())
    else this.#scheduled = false
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
  #batch(batch: Pending[]): Promise<number[]> {
    const insert = this.#insert
    const { transactionSync } = this.#database
    if (transactionSync)
      return transactionSync((tx) => batch.map((p) => Number(tx.first(insert, ...values(p.row))!.id)))
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

/**
 * How deliveries are stored: through the group-commit queue on SQLite, with the prepared
 * insert on its own on PostgreSQL (which takes concurrent inserts itself).
 */
export function notificationWriter(database: Database<DB>): (row: NewNotification) => Promise<number> {
  if (database.kind === 'sqlite') {
    const queue = new WriteQueue(database)
    return (row) => queue.insert(row)
  }
  const insert = prepareInsert(database)
  return (row) => insertRow(insert, row)
}
