/**
 * Group commit: writes that arrive in the same turn of the event loop are committed in one
 * transaction instead of one each. SQLite has one writer and rewrites the same B-tree pages
 * into the WAL per transaction; PostgreSQL pays a WAL flush and a round trip per commit. The
 * caller's promise resolves only after the transaction holding its item committed, so an
 * acknowledgement still means "stored".
 *
 * The queue starts writing in the turn's check phase (`setImmediate`), not at once: a
 * synchronous SQLite transaction runs to its end without yielding to I/O, so starting it at
 * the first item would commit every item alone. At most `maxInFlight` groups are being
 * committed at once (default one; SQLite has one writer anyway), and items that arrive
 * meanwhile form the next group, so under load a group holds what arrived during the last commit.
 *
 * If a group fails, nothing of it is committed (the caller's `commitGroup` runs in one
 * transaction) and each item is retried on its own, so one bad item fails only itself; unless
 * the database was unavailable (`isDatabaseUnavailable`), which fails every item at once.
 */

import { isDatabaseUnavailable } from './unavailable.ts'

export interface GroupCommitOptions<Item, Result> {
  /** Most items in one transaction; the rest wait for the next group. */
  maxGroup: number
  /** Groups being committed at once (default 1). A database with concurrent writers may
   * overlap one group's round trip with the next. */
  maxInFlight?: number
  /** Commit every item in one transaction, returning a result per item in order; throws
   * (having committed nothing) if any item fails. */
  commitGroup(items: Item[]): Promise<Result[]> | Result[]
  /** Commit one item alone: a group of one, and the retry of each item of a failed group. */
  commitOne(item: Item): Promise<Result> | Result
  /** Told the size of every group as it starts (1 for a lone item; not the retries of a failed
   * group): how well writes group under the load, for a metric. */
  onGroup?(size: number): void
}

interface Pending<Item, Result> {
  item: Item
  resolve(result: Result): void
  reject(err: unknown): void
}

export class GroupCommitQueue<Item, Result> {
  readonly #options: GroupCommitOptions<Item, Result>
  readonly #maxInFlight: number
  #pending: Array<Pending<Item, Result>> = []
  #inFlight = 0
  #scheduled = false

  constructor(options: GroupCommitOptions<Item, Result>) {
    if (!(options.maxGroup >= 1)) throw new RangeError('maxGroup must be at least 1')
    this.#maxInFlight = options.maxInFlight ?? 1
    if (!(this.#maxInFlight >= 1)) throw new RangeError('maxInFlight must be at least 1')
    this.#options = options
  }

  /** Items waiting for a transaction (not counting the groups being committed). */
  get waiting(): number {
    return this.#pending.length
  }

  /** Commit `item` with whatever else arrives in this turn; resolves once committed. */
  add(item: Item): Promise<Result> {
    return new Promise((resolve, reject) => {
      this.#pending.push({ item, resolve, reject })
      this.#schedule()
    })
  }

  #schedule(): void {
    if (this.#scheduled || this.#pending.length === 0 || this.#inFlight >= this.#maxInFlight) return
    this.#scheduled = true
    setImmediate(() => {
      this.#scheduled = false
      void this.#commitNext()
    })
  }

  async #commitNext(): Promise<void> {
    if (this.#inFlight >= this.#maxInFlight) return
    const group = this.#pending.splice(0, this.#options.maxGroup)
    if (group.length === 0) return
    this.#inFlight++
    this.#options.onGroup?.(group.length)
    // Another group may start beside this one (maxInFlight > 1) with what is left.
    this.#schedule()
    try {
      if (group.length === 1) await this.#one(group[0]!)
      else await this.#group(group)
    } finally {
      this.#inFlight--
      this.#schedule()
    }
  }

  async #group(group: Array<Pending<Item, Result>>): Promise<void> {
    let results: Result[]
    try {
      results = await this.#options.commitGroup(group.map((p) => p.item))
    } catch (err) {
      // The database could not be reached (or its disk is full): every item alone would only
      // fail the same way (on SQLite, each after waiting out the busy timeout).
      if (isDatabaseUnavailable(err)) {
        for (const p of group) p.reject(err)
        return
      }
      for (const p of group) await this.#one(p)
      return
    }
    for (let i = 0; i < group.length; i++) group[i]!.resolve(results[i]!)
  }

  async #one(p: Pending<Item, Result>): Promise<void> {
    try {
      p.resolve(await this.#options.commitOne(p.item))
    } catch (err) {
      p.reject(err)
    }
  }
}
