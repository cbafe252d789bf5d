/**
 * Group commit for observation pages, on both databases. Pages of the requests read in one
 * turn of the event loop (the queue starts writing in the turn's check phase, `setImmediate`)
 * are merged together in one transaction (on PostgreSQL with one multi-row statement of each
 * kind, `mergePages`; on SQLite page after page), and pages that arrive meanwhile form the next
 * group: one transaction at a time on SQLite, two on PostgreSQL. SQLite has one writer anyway, and committing each page separately rewrote the same
 * B-tree pages into the WAL once per page. On PostgreSQL one transaction per page let 32
 * uploads hold every pooled connection (three round trips each), so a gate's policy pull
 * queued behind them for a connection; now ingest holds at most two however many gates
 * upload (docs/performance/edgegate.md). If a group transaction fails, nothing of it is
 * committed and each page is retried in its own transaction, so one bad page fails only itself.
 */
import type { DatabaseKind } from '@gatehouse/kit'
import type { Kysely } from 'kysely'
import type { DB } from '../db/schema.ts'
import type { Aggregate } from './merge.ts'
import { mergeBatch, mergePages } from './store.ts'

/**
 * Pages per group. A group's merge runs in Node without yielding (PostgreSQL: the driver parses
 * the locked rows, then every row is merged and encoded), and a policy pull waits for such a
 * stretch at each of its steps; 16 pages (256 rows) keep it to a few milliseconds.
 * SQLite commits larger groups: its write lock serialises every writer anyway.
 */
const MAX_GROUP: Record<DatabaseKind, number> = { sqlite: 64, postgres: 16 }

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
  /** Group transactions in flight, at most `#lanes`. */
  #running = 0
  readonly #lanes: number
  #scheduled = false

  constructor(db: Kysely<DB>, kind: DatabaseKind) {
    this.#db = db
    this.#kind = kind
    // SQLite has one writer. PostgreSQL gets two: while one group waits for the server, the
    // next is parsed and sent, so the server and Node work at the same time (the groups lock
    // their rows in key order, so two cannot deadlock each other).
    this.#lanes = kind === 'postgres' ? 2 : 1
  }

  /** Merge one page; resolves once it is committed. Same contract as `mergeBatch`. */
  merge(instanceId: string, incoming: Aggregate[], cutoffMs: number, now: number): Promise<void> {
    if (incoming.length === 0) return Promise.resolve()
    return new Promise((resolve, reject) => {
      this.#pending.push({ instanceId, incoming, cutoffMs, now, resolve, reject })
      if (this.#running < this.#lanes && !this.#scheduled) {
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
    if (this.#running >= this.#lanes) return
    this.#running++
    try {
      while (this.#pending.length > 0) {
        const group = this.#pending.splice(0, MAX_GROUP[this.#kind])
        if (group.length === 1) await this.#one(group[0]!)
        else await this.#group(group)
      }
    } finally {
      this.#running--
    }
  }

  async #group(group: Pending[]): Promise<void> {
    try {
      // The group's newest clock: the pages were read within one turn of the event loop.
      let cutoffMs = group[0]!.cutoffMs
      let now = group[0]!.now
      for (const p of group) {
        if (p.cutoffMs > cutoffMs) cutoffMs = p.cutoffMs
        if (p.now > now) now = p.now
      }
      await this.#db.transaction().execute(async (trx) => {
        // PostgreSQL: one multi-row statement of each kind for the group (a round trip each).
        // SQLite has no round trips, and re-runs its cached page-sized statements faster than
        // it parses one statement of a thousand rows (measured: docs/performance/edgegate.md).
        if (this.#kind === 'postgres') await mergePages(trx, this.#kind, group, cutoffMs, now)
        else for (const p of group) await mergePages(trx, this.#kind, [p], p.cutoffMs, p.now)
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
