/**
 * Bounds on the fingerprint aggregates, part of the periodic cleanup. Gates cap their own stores
 * (`max_fingerprints`), but every fingerprint a gate ever saw is uploaded here, and a client that
 * varies its KEXINIT gets a new fingerprint per connection: without a bound, a scan of the
 * fleet grows this database for as long as it lasts. Two bounds, on aggregates nobody decided:
 *
 * - `--max-fingerprints` per node (the gate's own default, 100000; -1 unlimited): past it, the
 *   least recently seen go;
 * - `--fingerprint-retention` (0, the default, keeps them): those not seen for that long go.
 *
 * An aggregate with a live decision is never removed here (a decision's evidence stays while the
 * decision does). A removed fingerprint seen again starts a new aggregate. Deletes re-check their
 * conditions, so a fingerprint seen again or decided while the sweep runs stays.
 */
import type { ExpressionBuilder, Kysely } from 'kysely'
import type { DB } from '../db/schema.ts'
import { SCOPE_INSTANCE } from '../decisions/store.ts'

/** Aggregates a statement reads, about. */
const BATCH = 1000

/** `max_fingerprints` as configured: 0 is the default, -1 unlimited. */
export const DEFAULT_MAX_FINGERPRINTS = 100_000

type Eb = ExpressionBuilder<DB, 'fingerprints'>

/** No live instance decision for the row's fingerprint. */
const undecided = (eb: Eb) =>
  eb.not(
    eb.exists(
      eb
        .selectFrom('decisions as d')
        .select(eb.lit(1).as('one'))
        .where('d.scope_type', '=', SCOPE_INSTANCE)
        .whereRef('d.scope_id', '=', 'fingerprints.instance_id')
        .whereRef('d.fingerprint', '=', 'fingerprints.fingerprint')
        .where('d.deleted', '=', 0),
    ),
  )

const yieldTurn = () => new Promise((resolve) => setImmediate(resolve))

/** A range of last-seen times: after `after` (when set), up to `upTo`, inclusive or not. */
interface TimeRange {
  after: number | undefined
  upTo: number
  inclusive: boolean
}

const inTime = (eb: Eb, r: TimeRange) =>
  eb.and([
    ...(r.after === undefined ? [] : [eb('last_seen_ms', '>', r.after)]),
    eb('last_seen_ms', r.inclusive ? '<=' : '<', r.upTo),
  ])

/**
 * Walk the aggregates (of one node, or all) seen before `below`, least recently seen first, in
 * ranges of time holding about `BATCH` each (aggregates seen at the same time stay in one
 * range), calling `step` with each until it returns false. Each range is read along the
 * last-seen index, so no statement reads much more than `BATCH` rows and the walk is linear;
 * the rows go in about the order they were written, which keeps a delete's pages together.
 */
async function walkByTime(
  db: Kysely<DB>,
  instanceId: string | undefined,
  below: number,
  step: (range: TimeRange) => Promise<boolean>,
): Promise<void> {
  let after: number | undefined
  for (;;) {
    let q = db.selectFrom('fingerprints').select('last_seen_ms').where('last_seen_ms', '<', below)
    if (instanceId !== undefined) q = q.where('instance_id', '=', instanceId)
    if (after !== undefined) q = q.where('last_seen_ms', '>', after)
    const edge = await q.orderBy('last_seen_ms').limit(1).offset(BATCH).executeTakeFirst()
    // The last range, most runs empty: a read first, so a walk with nothing to do writes nothing
    // (a database turned read-only refuses even a delete that matches no row).
    if (
      !edge &&
      (await q
        .select((eb) => eb.lit(1).as('one'))
        .limit(1)
        .executeTakeFirst()) === undefined
    )
      return
    const range: TimeRange = edge
      ? { after, upTo: Number(edge.last_seen_ms), inclusive: true }
      : { after, upTo: below, inclusive: false }
    if (!(await step(range)) || !edge) return
    after = range.upTo
    await yieldTurn()
  }
}

/** Remove undecided aggregates last seen before `cutoffMs`; how many went. */
export async function removeUnseenAggregates(db: Kysely<DB>, cutoffMs: number): Promise<number> {
  let removed = 0
  await walkByTime(db, undefined, cutoffMs, async (range) => {
    const r = await db
      .deleteFrom('fingerprints')
      .where((eb) => eb.and([inTime(eb, range), undecided(eb)]))
      .executeTakeFirst()
    removed += Number(r.numDeletedRows)
    return true
  })
  return removed
}

/**
 * Bring each node down to `max` aggregates (-1: no cap), removing its least recently seen
 * undecided ones; how many went. Decided aggregates count but stay, so a node with more than
 * `max` decisions keeps them all.
 */
export async function pruneAggregatesToCap(
  db: Kysely<DB>,
  max: number,
  /** Told each node that went over, and how many of its aggregates were removed. */
  onNode?: (instanceId: string, removed: number) => void,
): Promise<number> {
  if (max < 0) return 0
  const over = await db
    .selectFrom('fingerprints')
    .select((eb) => ['instance_id', eb.fn.countAll<number | string>().as('n')])
    .groupBy('instance_id')
    .having((eb) => eb.fn.countAll(), '>', max)
    .execute()
  let total = 0
  for (const { instance_id, n } of over) {
    const removed = await pruneNode(db, instance_id, Number(n) - max)
    if (removed > 0) onNode?.(instance_id, removed)
    total += removed
  }
  return total
}

/** Remove a node's `excess` least recently seen undecided aggregates (ties by fingerprint). */
async function pruneNode(db: Kysely<DB>, instanceId: string, excess: number): Promise<number> {
  let removed = 0
  await walkByTime(db, instanceId, Number.MAX_SAFE_INTEGER, async (range) => {
    // A range holds more than a batch only when many were seen at one time: then it is read again.
    for (;;) {
      const want = Math.min(BATCH, excess - removed)
      const keys = await db
        .selectFrom('fingerprints')
        .select('fingerprint')
        .where('instance_id', '=', instanceId)
        .where((eb) => eb.and([inTime(eb, range), undecided(eb)]))
        .orderBy('last_seen_ms')
        .orderBy('fingerprint')
        .limit(want)
        .execute()
      if (keys.length === 0) return true
      const r = await db
        .deleteFrom('fingerprints')
        .where('instance_id', '=', instanceId)
        .where(
          'fingerprint',
          'in',
          keys.map((k) => k.fingerprint),
        )
        .where((eb) => eb.and([inTime(eb, range), undecided(eb)]))
        .executeTakeFirst()
      removed += Number(r.numDeletedRows)
      if (removed >= excess) return false
      if (keys.length < want) return true
    }
  })
  return removed
}
