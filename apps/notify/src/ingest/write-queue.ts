/**
 * SQLite group commit. SQLite has one writer, and each autocommitted insert writes its
 * own pages to the WAL; deliveries that arrive in the same event-loop turn are instead
 * inserted in one transaction. Each delivery's promise resolves only after that
 * transaction committed, so a 2xx still means the notification is stored.
 *
 * If the batch fails (a row violating a constraint), it is rolled back and every row is
 * inserted on its own, so one bad row fails only its own delivery.
 *
 * Given the node:sqlite connection under the Kysely instance, a batch runs as prepared
 * statements, synchronously from BEGIN to COMMIT (nothing else can run on the connection
 * in between). While a Kysely transaction is open on that connection (it spans awaits),
 * the batch goes through Kysely instead, which waits for that transaction to end.
 */
import type { DatabaseSync, StatementSync } from 'node:sqlite'
import { CompiledQuery, type Kysely, type Transaction } from 'kysely'
import type { DB, NewNotification } from '../db/schema.ts'

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

export async function insertNotification(db: Kysely<DB> | Transaction<DB>, row: NewNotification): Promise<number> {
  const inserted = await db.insertInto('notifications').values(row).returning('id').executeTakeFirstOrThrow()
  return Number(inserted.id)
}

const PG_INSERT = `insert into notifications (${COLUMNS.join(', ')})
  values (${COLUMNS.map((_, i) => `$${i + 1}`).join(', ')}) returning id`

/** PostgreSQL: the same insert as fixed SQL (no query building per delivery). */
export async function insertNotificationPg(db: Kysely<DB>, row: NewNotification): Promise<number> {
  const r = await db.executeQuery<{ id: number }>(CompiledQuery.raw(PG_INSERT, values(row)))
  return Number(r.rows[0]!.id)
}

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

/** The same insert as a prepared statement on the raw connection. */
class RawInsert {
  readonly #sqlite: DatabaseSync
  readonly #insert: StatementSync
  constructor(sqlite: DatabaseSync) {
    this.#sqlite = sqlite
    this.#insert = sqlite.prepare(
      `insert into notifications (${COLUMNS.join(', ')}) values (${COLUMNS.map(() => '?').join(', ')})`,
    )
  }
  /** Whether the connection is free (no Kysely transaction open on it). */
  get usable(): boolean {
    return this.#sqlite.isOpen && !this.#sqlite.isTransaction
  }
  one(row: NewNotification): number {
    const r = this.#insert.run(...values(row))
    return Number(r.lastInsertRowid)
  }
  /** All rows in one immediate transaction; throws (after rolling back) if any fails. */
  batch(rows: NewNotification[]): number[] {
    this.#sqlite.exec('begin immediate')
    try {
      const ids = rows.map((row) => this.one(row))
      this.#sqlite.exec('commit')
      return ids
    } catch (err) {
      if (this.#sqlite.isTransaction) this.#sqlite.exec('rollback')
      throw err
    }
  }
}

export class WriteQueue {
  readonly #db: Kysely<DB>
  readonly #raw: RawInsert | undefined
  #pending: Pending[] = []
  #scheduled = false

  /** `sqlite`: the connection under `db`, for the prepared-statement path. */
  constructor(db: Kysely<DB>, sqlite?: DatabaseSync) {
    this.#db = db
    this.#raw = sqlite ? new RawInsert(sqlite) : undefined
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
      const raw = this.#raw
      ids = raw?.usable
        ? raw.batch(batch.map((p) => p.row))
        : await this.#db.transaction().execute(async (trx) => {
            const out: number[] = []
            for (const p of batch) out.push(await insertNotification(trx, p.row))
            return out
          })
    } catch {
      for (const p of batch) await this.#one(p)
      return
    }
    for (let i = 0; i < batch.length; i++) batch[i]!.resolve(ids[i]!)
  }

  async #one(p: Pending): Promise<void> {
    try {
      const raw = this.#raw
      p.resolve(raw?.usable ? raw.one(p.row) : await insertNotification(this.#db, p.row))
    } catch (err) {
      p.reject(err)
    }
  }
}
