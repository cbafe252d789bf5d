/**
 * SQLite group commit. SQLite has one writer, and each autocommitted insert writes its
 * own pages to the WAL; deliveries that arrive in the same event-loop turn are instead
 * inserted in one transaction. Each delivery's promise resolves only after that
 * transaction committed, so a 2xx still means the notification is stored.
 *
 * If the batch fails (a row violating a constraint), it is rolled back and every row is
 * inserted on its own, so one bad row fails only its own delivery.
 */
import type { Kysely, Transaction } from 'kysely'
import type { DB, NewNotification } from '../db/schema.ts'

interface Pending {
  row: NewNotification
  resolve(id: number): void
  reject(err: unknown): void
}

/** Most rows per transaction (more wait for the next turn). */
const MAX_BATCH = 256

export async function insertNotification(db: Kysely<DB> | Transaction<DB>, row: NewNotification): Promise<number> {
  const inserted = await db.insertInto('notifications').values(row).returning('id').executeTakeFirstOrThrow()
  return Number(inserted.id)
}

export class WriteQueue {
  readonly #db: Kysely<DB>
  #pending: Pending[] = []
  #scheduled = false

  constructor(db: Kysely<DB>) {
    this.#db = db
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
      ids = await this.#db.transaction().execute(async (trx) => {
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
      p.resolve(await insertNotification(this.#db, p.row))
    } catch (err) {
      p.reject(err)
    }
  }
}
