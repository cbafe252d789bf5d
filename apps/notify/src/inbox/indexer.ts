/**
 * The background search indexer, on both databases.
 *
 * PostgreSQL: the trigram GIN index takes each delivery's entries into its pending list
 * (fast update), and this merges the list into the index every pass
 * (`gin_clean_pending_list`), in its own connection, while deliveries go on being inserted.
 * Otherwise the insert that fills the list to its limit merges it, holding the stream-order
 * lock every other insert waits for (migration 0011). Searches read the pending list too.
 *
 * SQLite: the background search indexer. A delivery only inserts its notification row;
 * this moves new rows into the FTS5 trigram table in batches, each in one transaction
 * with the high-water mark (search_index_state), so "every id <= high_water is indexed"
 * always holds. Search reads the mark first and scans the newer rows without the index
 * (see queryInbox), so results never depend on whether the indexer has run yet.
 *
 * Batching is the point: FTS5 writes a new index segment per transaction, so indexing a
 * thousand rows at once costs far less per row than one at a time in each delivery.
 * The indexer runs in every process that serves the database; several of them (or a
 * restart after a crash) are safe because each batch reads and advances the mark inside
 * its own write transaction.
 *
 * Segments are merged by the indexer too, in steps (`searchMerger`). FTS5's own automatic
 * merging (off since migration 0012) ran in the commit of whichever batch filled a level:
 * every few batches one commit merged several segments at once, 160-215 ms on the serving
 * thread for an index of 200,000 rows (`npm run bench:index -w apps/notify`). A step writes
 * at most MERGE_PAGES leaf pages in its own transaction, and the event loop turns between
 * steps, for the same CPU in all.
 *
 * How many segments make a level worth merging depends on whether rows are coming in. While
 * they are, eight: each row is rewritten less often (four after every batch that was not full
 * cost the ingestion bench ~10 % of its throughput at 32 connections). Once a pass finds
 * nothing to index, four, FTS5's own default: an index grown under load (thirteen segments at
 * a million rows) comes down to three, for 0.7 CPU-s per million rows, and searches that read
 * long doclists in every segment run 3-12 % faster (`npm run bench:segments -w apps/notify`).
 */
import { type Database, type DatabaseKind, type Logger, sql } from '@gatehouse/kit'
import { RepeatedFailure } from '@gatehouse/kit/repeated-failure.ts'
import { CompiledQuery, type Kysely, type Transaction } from 'kysely'
import type { DB } from '../db/schema.ts'

/** Rows per transaction; bounds how long a batch's insert holds the serving thread (up to ~40 ms). */
export const INDEX_BATCH = 1000
/**
 * Pause between passes when the backlog is empty or was fully drained. Longer pauses make
 * larger batches, and FTS5 indexes a row for less in a larger one (20,000 Alertmanager
 * rows: ~20 µs per row in batches of 400, ~15 µs in batches of 2,000, with FTS5's own
 * merging; with the indexer's merge steps, batches of 1,000 and 2,000 cost about the same);
 * searches scan the rows of at most one pause without the index (~1,600 rows at 8,000
 * deliveries/s).
 */
export const INDEX_INTERVAL_MS = 200
/** Leaf pages one merge step writes at most (a few milliseconds of work). */
export const MERGE_PAGES = 50
/** Segments in a level that make a step merge it while rows are being indexed (`usermerge`, migration 0012). */
export const BUSY_MERGE_LEVEL = 8
/** The same once there is nothing to index (set for the step only; the index's own setting stays 8). */
export const IDLE_MERGE_LEVEL = 4
export type MergeLevel = typeof BUSY_MERGE_LEVEL | typeof IDLE_MERGE_LEVEL
/** Merge steps in one pass; more waiting make the next pass start at once. */
const MERGE_STEPS_PER_PASS = 64

/** Notifications with an id up to this are in the trigram index. */
export async function indexedUpTo(db: Kysely<DB> | Transaction<DB>): Promise<number> {
  const row = await db.selectFrom('search_index_state').select('high_water').where('id', '=', 1).executeTakeFirst()
  return Number(row?.high_water ?? 0)
}

/** Index up to `max` not-yet-indexed notifications, oldest first; returns how many. */
export async function indexPending(db: Kysely<DB>, max = INDEX_BATCH): Promise<number> {
  // A cheap read first: an idle server must not write a transaction every pass.
  const pending = await sql<{ p: number }>`select exists (select 1 from notifications
    where id > (select high_water from search_index_state where id = 1)) as p`.execute(db)
  if (Number(pending.rows[0]?.p ?? 0) === 0) return 0
  return db.transaction().execute(async (trx) => {
    // Write first, so the transaction holds the write lock before it reads the mark.
    await sql`update search_index_state set high_water = high_water where id = 1`.execute(trx)
    const low = await indexedUpTo(trx)
    const range = await sql<{ n: number; upto: number | null }>`select count(*) as n, max(id) as upto
      from (select id from notifications where id > ${low} order by id limit ${max})`.execute(trx)
    const { n, upto } = range.rows[0] ?? { n: 0, upto: null }
    if (upto === null || Number(n) === 0) return 0
    await sql`insert into notification_fts (rowid, search_text)
      select id, search_text from notifications where id > ${low} and id <= ${upto}`.execute(trx)
    await trx
      .updateTable('search_index_state')
      .set({ high_water: Number(upto) })
      .where('id', '=', 1)
      .execute()
    return Number(n)
  })
}

/**
 * SQLite: one step of merging the trigram index's segments (FTS5's `merge` command, which
 * merges only where a level holds `level` segments, or goes on with a merge begun); whether
 * it merged anything. Built once per database: its statements are prepared.
 */
export function searchMerger(database: Database<DB>): (level?: MergeLevel) => Promise<boolean> {
  const { transactionSync } = database
  if (transactionSync === undefined) throw new TypeError('searchMerger: SQLite only')
  const raw = (query: string) => database.prepare({ compile: () => CompiledQuery.raw(query) })
  const changes = database.prepare<{ t: number }>({ compile: () => CompiledQuery.raw('select total_changes() as t') })
  const merge = raw(`insert into notification_fts (notification_fts, rank) values ('merge', ${MERGE_PAGES})`)
  const setLevel = (level: MergeLevel) =>
    raw(`insert into notification_fts (notification_fts, rank) values ('usermerge', ${level})`)
  const idle = setLevel(IDLE_MERGE_LEVEL)
  const busy = setLevel(BUSY_MERGE_LEVEL)
  // The command itself counts as one change; FTS5 documents two or more as "work was done".
  // Counted inside one synchronous transaction, so no delivery's insert is counted with it.
  // The idle level is set and reset inside the same transaction, so the index's own setting
  // (what another process reads) never changes.
  return (level = BUSY_MERGE_LEVEL) =>
    transactionSync((tx) => {
      if (level === IDLE_MERGE_LEVEL) tx.run(idle)
      const before = tx.first(changes)!.t
      tx.run(merge)
      const worked = tx.first(changes)!.t - before >= 2
      if (level === IDLE_MERGE_LEVEL) tx.run(busy)
      return worked
    })
}

/** SQLite: how many segments the trigram index holds (FTS5's `_idx` has rows per segment). */
export async function searchSegments(db: Kysely<DB>): Promise<number> {
  const r = await sql<{ n: number }>`select count(distinct segid) as n from notification_fts_idx`.execute(db)
  return Number(r.rows[0]!.n)
}

/**
 * Index and merge everything pending, leaving the index as a server's indexer leaves it once
 * there is nothing more to index (bench and tests; the server uses SearchIndexer).
 */
export async function indexAll(database: Database<DB>, batch = INDEX_BATCH): Promise<void> {
  const merge = searchMerger(database)
  while ((await indexPending(database.db, batch)) > 0) while (await merge(BUSY_MERGE_LEVEL)) {}
  while (await merge(IDLE_MERGE_LEVEL)) {}
}

/** PostgreSQL: merge the trigram index's pending list into the index; the pages it emptied. */
export async function mergePendingSearch(db: Kysely<DB>): Promise<number> {
  const r = await sql<{
    pages: string | number
  }>`select gin_clean_pending_list('notifications_search'::regclass) as pages`.execute(db)
  return Number(r.rows[0]?.pages ?? 0)
}

/** PostgreSQL's insufficient_privilege: the role does not own the index (a read-only replica user, say). */
const INSUFFICIENT_PRIVILEGE = '42501'

export class SearchIndexer {
  readonly #db: Kysely<DB>
  readonly #logger: Logger
  /** Passes retried every second while the database is unusable, logged once a minute. */
  readonly #failures: RepeatedFailure
  readonly #intervalMs: number
  readonly #kind: DatabaseKind
  readonly #merge: ((level: MergeLevel) => Promise<boolean>) | undefined
  /** SQLite: rows were indexed (or the process started) since merging at the idle level last found nothing to do. */
  #mergeDue = true
  #timer: NodeJS.Timeout | undefined
  #running: Promise<void> | undefined
  #stopped = false

  constructor(database: Database<DB>, logger: Logger, intervalMs = INDEX_INTERVAL_MS) {
    this.#db = database.db
    this.#logger = logger
    this.#failures = new RepeatedFailure(logger, {
      failed: 'search indexing failed; retrying',
      recovered: 'search indexing works again',
      level: 'warn',
    })
    this.#intervalMs = intervalMs
    this.#kind = database.kind
    this.#merge = database.kind === 'sqlite' ? searchMerger(database) : undefined
  }

  start(): void {
    this.#schedule(0)
  }

  #schedule(ms: number) {
    if (this.#stopped) return
    this.#timer = setTimeout(() => {
      this.#running = this.#pass()
    }, ms)
    this.#timer.unref()
  }

  async #pass(): Promise<void> {
    let next = this.#intervalMs
    try {
      // A full batch means more is waiting: go on at once (after other queued work).
      if (this.#kind === 'postgres') await mergePendingSearch(this.#db)
      else {
        const indexed = await indexPending(this.#db)
        if (indexed > 0) this.#mergeDue = true
        if (this.#mergeDue) {
          const idle = indexed === 0
          const stepsLeft = await this.#mergeSteps(idle ? IDLE_MERGE_LEVEL : BUSY_MERGE_LEVEL)
          if (stepsLeft) next = 0
          else if (idle) this.#mergeDue = false
        }
        if (indexed === INDEX_BATCH) next = 0
      }
    } catch (err) {
      if ((err as { code?: string }).code === INSUFFICIENT_PRIVILEGE) {
        // Inserts still merge the list themselves when it is full: nothing is lost but speed.
        this.#logger.warn({ err: (err as Error).message }, 'cannot merge the search index pending list; inserts will')
        return
      }
      // Retried every second: logged once a minute while the database stays unusable.
      this.#failures.failed(err)
      next = Math.max(this.#intervalMs, 1000)
      this.#schedule(next)
      return
    }
    this.#failures.succeeded()
    this.#schedule(next)
  }

  /** SQLite: merge steps until none merges anything; whether steps were left for the next pass. */
  async #mergeSteps(level: MergeLevel): Promise<boolean> {
    for (let step = 0; step < MERGE_STEPS_PER_PASS; step++) {
      if (this.#stopped || !(await this.#merge!(level))) return false
      // Deliveries waiting for the connection go first.
      await new Promise((resolve) => setImmediate(resolve))
    }
    return true
  }

  /** Stop the loop and wait for a pass in progress (rows left over are indexed by the next start). */
  async stop(): Promise<void> {
    this.#stopped = true
    clearTimeout(this.#timer)
    await this.#running
  }
}
