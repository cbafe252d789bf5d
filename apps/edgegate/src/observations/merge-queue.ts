/**
 * Group commit for observation pages on SQLite. SQLite has one writer at a time, so
 * concurrent pages queue for the write lock anyway; committing each one separately rewrites
 * the same B-tree pages into the WAL once per page. Pages of the requests read in one turn
 * of the event loop (the queue starts writing in the turn's check phase, `setImmediate`)
 * are merged together in one transaction, page after page with the very same
 * statements as `mergeBatch` (a fingerprint in two pages of one group merges twice, as it
 * would in two transactions). If the group transaction fails, nothing of it is committed
 * and each page is retried in its own transaction, so one bad page fails only itself.
 * PostgreSQL does not use this: it has concurrent writers and row locks.
 */
import type { DatabaseKind } from '@gatehouse/kit'
import type { Kysely } from 'kysely'
import type { DB } from '../db/schema.ts'
import type { Aggregate } from './merge.ts'
import { mergeBatch, mergePage } from './store.ts'

const MAX_GROUP = 64

interface Pending {
  instanceId: string
  incoming: Aggregate[]
  cutoffMs: number
  now: number
  resolve: () => void
  reject: (err: unknown) => void
}

export class MergeQueue {
  readonly #db: Kysely<DB>
  readonly #kind: DatabaseKind
  #pending: Pending[] = []
  #running = false
  #scheduled = false

  constructor(db: Kysely<DB>, kind: DatabaseKind) {
    this.#db = db
    this.#kind = kind
  }

  /** Merge one page; resolves once it is committed. Same contract as `mergeBatch`. */
  merge(instanceId: string, incoming: Aggregate[], cutoffMs: number, now: number): Promise<void> {
    if (this.#kind !== 'sqlite') return mergeBatch(this.#db, this.#kind, instanceId, incoming, cutoffMs, now)
    if (incoming.length === 0) return Promise.resolve()
    return new Promise((resolve, reject) => {
      this.#pending.push({ instanceId, incoming, cutoffMs, now, resolve, reject })
      if (!this.#running && !this.#scheduled) {
        // Start after the event loop's current I/O phase, not at once: a SQLite transaction
        // runs to its end without yielding to I/O, so starting it here would commit every
        // page alone. Pages from the requests read in the same phase join this group.
        this.#scheduled = true
        setImmediate(() => {
          this.#scheduled = false
          void this.#drain()
        })
      }
    })
  }

  async #drain(): Promise<void> {
    this.#running = true
    try {
      while (this.#pending.length > 0) {
        const group = this.#pending.splice(0, MAX_GROUP)
        if (group.length === 1) await this.#one(group[0]!)
        else await this.#group(group)
      }
    } finally {
      this.#running = false
    }
  }

  async #group(group: Pending[]): Promise<void> {
    try {
      await this.#db.transaction().execute(async (trx) => {
        for (const p of group) await mergePage(trx, this.#kind, p.instanceId, p.incoming, p.cutoffMs, p.now)
      })
    } catch {
      for (const p of group) await this.#one(p)
      return
    }
    for (const p of group) p.resolve()
  }

  async #one(p: Pending): Promise<void> {
    try {
      await mergeBatch(this.#db, this.#kind, p.instanceId, p.incoming, p.cutoffMs, p.now)
      p.resolve()
    } catch (err) {
      p.reject(err)
    }
  }
}
