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
import type { Expression, ExpressionBuilder, Kysely, SqlBool } from 'kysely'
import type { DB } from '../db/schema.ts'
import { SCOPE_INSTANCE } from '../decisions/store.ts'

/** Aggregates examined per statement. */
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

type Key = { instance_id: string; fingerprint: string }

/** Rows whose key is in [first, last]. */
const inRange = (eb: Eb, first: Key, last: Key) =>
  eb.and([
    eb(eb.refTuple('instance_id', 'fingerprint'), '>=', eb.tuple(first.instance_id, first.fingerprint)),
    eb(eb.refTuple('instance_id', 'fingerprint'), '<=', eb.tuple(last.instance_id, last.fingerprint)),
  ])

/**
 * Walk the aggregates (of one node, or all) in key order, `BATCH` keys a step, calling `step`
 * with each step's key range until it returns false. A step's statements read at most `BATCH`
 * rows whatever they select, so on SQLite none holds the server for long, and the walk is
 * linear: each step starts after the last key.
 */
async function walk(
  db: Kysely<DB>,
  instanceId: string | undefined,
  step: (first: Key, last: Key) => Promise<boolean>,
): Promise<void> {
  let after: Key | undefined
  for (;;) {
    let q = db.selectFrom('fingerprints').select(['instance_id', 'fingerprint'])
    const from = after
    // One node: a range of its fingerprints. (SQLite would read `instance_id = ? and (instance_id,
    // fingerprint) > (?, ?)` as the node's whole range, filtered: quadratic over a walk.)
    if (instanceId !== undefined) {
      q = q.where('instance_id', '=', instanceId)
      if (from) q = q.where('fingerprint', '>', from.fingerprint)
    } else if (from) {
      q = q.where((eb) =>
        eb(eb.refTuple('instance_id', 'fingerprint'), '>', eb.tuple(from.instance_id, from.fingerprint)),
      )
    }
    const keys = await q.orderBy('instance_id').orderBy('fingerprint').limit(BATCH).execute()
    if (keys.length === 0) return
    after = keys[keys.length - 1]!
    if (!(await step(keys[0]!, after)) || keys.length < BATCH) return
    await yieldTurn()
  }
}

/** Delete the aggregates `victim` selects that no decision holds, a step at a time; how many went. */
async function deleteWalking(
  db: Kysely<DB>,
  instanceId: string | undefined,
  victim: (eb: Eb) => Expression<SqlBool>,
): Promise<number> {
  let total = 0
  await walk(db, instanceId, async (first, last) => {
    const r = await db
      .deleteFrom('fingerprints')
      .where((eb) => eb.and([inRange(eb, first, last), victim(eb), undecided(eb)]))
      .executeTakeFirst()
    total += Number(r.numDeletedRows)
    return true
  })
  return total
}

/** Remove undecided aggregates last seen before `cutoffMs`; how many went. */
export function removeUnseenAggregates(db: Kysely<DB>, cutoffMs: number): Promise<number> {
  return deleteWalking(db, undefined, (eb) => eb('last_seen_ms', '<', cutoffMs))
}

/**
 * Bring each node down to `max` aggregates (-1: no cap), removing its least recently seen
 * undecided ones; how many went. Decided aggregates count but stay, so a node with more than
 * `max` decisions keeps them all.
 */
export async function pruneAggregatesToCap(db: Kysely<DB>, max: number): Promise<number> {
  if (max < 0) return 0
  const over = await db
    .selectFrom('fingerprints')
    .select((eb) => ['instance_id', eb.fn.countAll<number | string>().as('n')])
    .groupBy('instance_id')
    .having((eb) => eb.fn.countAll(), '>', max)
    .execute()
  let total = 0
  for (const { instance_id, n } of over) total += await pruneNode(db, instance_id, Number(n) - max)
  return total
}

/**
 * Remove a node's `excess` least recently seen undecided aggregates. The edge time is found in
 * memory from the times read a step at a time (one statement sorting a flooded node's rows
 * would hold SQLite's server for seconds): everything seen before it goes, then as many seen at
 * it as the excess still needs.
 */
async function pruneNode(db: Kysely<DB>, instanceId: string, excess: number): Promise<number> {
  const times: number[] = []
  await walk(db, instanceId, async (first, last) => {
    const rows = await db
      .selectFrom('fingerprints')
      .select('last_seen_ms')
      .where((eb) => eb.and([inRange(eb, first, last), undecided(eb)]))
      .execute()
    for (const r of rows) times.push(Number(r.last_seen_ms))
    return true
  })
  if (times.length <= excess) return deleteWalking(db, instanceId, (eb) => eb.lit(true))
  const edge = Float64Array.from(times).sort()[excess - 1]!
  let removed = await deleteWalking(db, instanceId, (eb) => eb('last_seen_ms', '<', edge))
  await walk(db, instanceId, async (first, last) => {
    if (removed >= excess) return false
    const tied = await db
      .selectFrom('fingerprints')
      .select('fingerprint')
      .where((eb) => eb.and([inRange(eb, first, last), eb('last_seen_ms', '=', edge), undecided(eb)]))
      .limit(excess - removed)
      .execute()
    if (tied.length > 0) {
      const r = await db
        .deleteFrom('fingerprints')
        .where('instance_id', '=', instanceId)
        .where(
          'fingerprint',
          'in',
          tied.map((t) => t.fingerprint),
        )
        .where((eb) => eb.and([eb('last_seen_ms', '=', edge), undecided(eb)]))
        .executeTakeFirst()
      removed += Number(r.numDeletedRows)
    }
    return true
  })
  return removed
}
