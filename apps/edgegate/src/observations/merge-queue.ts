/**
 * Group commit for observation pages, on both databases, through the kit's GroupCommitQueue.
 * Pages of the requests read in one turn of the event loop are merged together in one
 * transaction (`mergeGroup`: on PostgreSQL with one multi-row statement of each kind, on SQLite
 * row by row in one synchronous transaction), and pages that arrive meanwhile form the next
 * group: one transaction at a time on SQLite, two on PostgreSQL. SQLite has one writer anyway,
 * and committing each page separately rewrote the same B-tree pages into the WAL once per page.
 * On PostgreSQL one transaction per page let 32 uploads hold every pooled connection (three
 * round trips each), so a gate's policy pull queued behind them for a connection; now ingest
 * holds at most two however many gates upload (docs/performance/edgegate.md). If a group
 * transaction fails, nothing of it is committed and each page is retried in its own
 * transaction, so one bad page fails only itself.
 */
import type { AppMetrics, DatabaseKind } from '@gatehouse/kit'
import { GroupCommitQueue } from '@gatehouse/kit/db/group-commit.ts'
import type { EdgeDatabase } from '../db/open.ts'
import { mergeBatch, mergeGroup } from './group-merge.ts'
import type { Aggregate } from './merge.ts'

/**
 * Pages per group. A policy pull waits at each of its steps for what the event loop is doing,
 * and on PostgreSQL a group's steps are long ones: the driver parses the locked rows and writes
 * the group's statements in one go, and the rows are merged in slices of `MERGE_SLICE`. 8 pages
 * (128 rows) with those slices took the pull's p99 during saturating ingest from a median of
 * 22.8 to 15.3 ms at the same upload rate, which the statements' per-column parameters pay
 * for (docs/performance/edgegate.md, round 5).
 * SQLite commits larger groups: its write lock serialises every writer anyway.
 */
const MAX_GROUP: Record<DatabaseKind, number> = { sqlite: 64, postgres: 8 }

/** One gate's page of observations. */
interface Page {
  instanceId: string
  incoming: Aggregate[]
  cutoffMs: number
  now: number
  /** A TLS gate's page (see `MergePage.tls`). */
  tls: boolean
}

/** The kit's group-commit queue with edgegate's merges (see the top of this file). */
export class MergeQueue {
  readonly #queue: GroupCommitQueue<Page, undefined>

  constructor(database: EdgeDatabase, metrics?: AppMetrics) {
    const kind: DatabaseKind = database.kind
    const sizes = metrics?.histogram(
      'observation_group_pages',
      'Observation pages merged per transaction (group commit)',
      [],
      [1, 2, 4, 8, 16, 32, 64],
    )
    this.#queue = new GroupCommitQueue<Page, undefined>({
      maxGroup: MAX_GROUP[kind],
      // SQLite has one writer. PostgreSQL gets two: while one group waits for the server, the
      // next is parsed and sent, so the server and Node work at the same time (the groups lock
      // their rows in key order, so two cannot deadlock each other).
      maxInFlight: kind === 'postgres' ? 2 : 1,
      commitGroup: async (group) => {
        // The group's newest clock: the pages were read within one turn of the event loop.
        let cutoffMs = group[0]!.cutoffMs
        let now = group[0]!.now
        for (const p of group) {
          if (p.cutoffMs > cutoffMs) cutoffMs = p.cutoffMs
          if (p.now > now) now = p.now
        }
        await mergeGroup(database, group, cutoffMs, now)
        return group.map(() => undefined)
      },
      commitOne: async (p) => {
        await mergeBatch(database, p.instanceId, p.incoming, p.cutoffMs, p.now, p.tls)
        return undefined
      },
      ...(sizes ? { onGroup: (size: number) => sizes.observe(size) } : {}),
    })
  }

  /** Merge one page; resolves once it is committed. Same contract as `mergeBatch`. */
  merge(instanceId: string, incoming: Aggregate[], cutoffMs: number, now: number, tls = false): Promise<void> {
    if (incoming.length === 0) return Promise.resolve()
    return this.#queue.add({ instanceId, incoming, cutoffMs, now, tls }).then(() => {})
  }
}
