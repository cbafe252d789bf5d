/**
 * SQL for decisions and the decision clock.
 *
 * The clock is one row. Every decision write first moves it forward inside its own
 * transaction (`last_us = max(last_us + n, now_us + n - 1)`), which row-locks it until
 * commit. So decision times are unique, strictly increasing, and committed in time order
 * across every edgegate process sharing the database: once a reader sees time T, every
 * decision with a time below T is already visible. A gate following the cursor therefore
 * never misses a change, whatever the clocks of the processes or the commit delays.
 *
 * A delete is a decision write too: it turns the row into a tombstone (`deleted = 1`, status
 * `pending`, empty label) at a fresh clock time, so the policy carries it to gates. Reads for
 * administration (`getDecision`, `decisionsFor`, `listDecisions`) skip tombstones;
 * `decisionsSince` (the policy) returns them. Retention removes tombstones past
 * `--deleted-decision-retention` (`purgeTombstones`), recording the newest time removed.
 */
import { type DatabaseKind, sql } from '@gatehouse/kit/db/database.ts'
import type { Kysely, Transaction } from 'kysely'
import type { DB, DecisionRow, NewDecision, NodeRow } from '../db/schema.ts'

type Db = Kysely<DB> | Transaction<DB>

export const SCOPE_INSTANCE = 'instance'

/** Reserve `n` consecutive decision times; returns the first. Must run inside the writing transaction. */
export async function tickClock(trx: Transaction<DB>, kind: DatabaseKind, n = 1, nowUs = Date.now() * 1000) {
  const max = sql.raw(kind === 'postgres' ? 'greatest' : 'max')
  const r = await sql<{ last_us: number | string }>`update decision_clock set last_us = ${max}(last_us + ${n}, ${
    nowUs + n - 1
  }) where id = 1 returning last_us`.execute(trx)
  return Number(r.rows[0]!.last_us) - n + 1
}

/** The newest decision time this database has issued (0 before the first decision). */
export async function readDecisionClock(db: Db): Promise<number> {
  const row = await db.selectFrom('decision_clock').select('last_us').where('id', '=', 1).executeTakeFirst()
  return Number(row?.last_us ?? 0)
}

/**
 * Tombstones never purged at a time this recent, whatever the configuration (a process with
 * another setting, an older or newer version): a gate whose cursor is younger, minus an hour of
 * clock difference between processes, cannot have missed one (policy/routes.ts).
 */
export const MIN_TOMBSTONE_AGE_US = 86_400_000_000

/** The newest time of a tombstone retention removed (0 for none). */
export async function readPurgedThrough(db: Db): Promise<number> {
  const row = await db.selectFrom('decision_clock').select('purged_us').where('id', '=', 1).executeTakeFirst()
  return Number(row?.purged_us ?? 0)
}

/**
 * Remove the tombstones whose time is before `beforeUs` (never within `MIN_TOMBSTONE_AGE_US` of
 * now), `batch` per transaction; returns how many. Each transaction moves the purge mark to the
 * newest time it removes before removing: a pull that found a tombstone gone then finds the mark
 * past it. The mark is on the clock's row, so decision writes wait for a batch (milliseconds),
 * taking the same locks in the same order (clock, then decisions).
 */
export async function purgeTombstones(db: Kysely<DB>, kind: DatabaseKind, beforeUs: number, batch = 1000) {
  const before = Math.min(beforeUs, Date.now() * 1000 - MIN_TOMBSTONE_AGE_US)
  const max = sql.raw(kind === 'postgres' ? 'greatest' : 'max')
  let total = 0
  for (;;) {
    const n = await db.transaction().execute(async (trx) => {
      const edge = await trx
        .selectFrom('decisions')
        .select('updated_us')
        .where('deleted', '=', 1)
        .where('updated_us', '<', before)
        .orderBy('updated_us')
        .limit(1)
        .offset(batch - 1)
        .executeTakeFirst()
      // The batch-th oldest tombstone ends the range; fewer than a batch: the newest before the
      // cutoff. The mark is a removed tombstone's time, never later: marks past the decision
      // clock would send gates that hold every decision into a resync at each pull.
      const newest = edge
        ? edge.updated_us
        : (
            await trx
              .selectFrom('decisions')
              .select((eb) => eb.fn.max('updated_us').as('t'))
              .where('deleted', '=', 1)
              .where('updated_us', '<', before)
              .executeTakeFirst()
          )?.t
      if (newest === null || newest === undefined) return 0
      const upTo = Number(newest)
      await sql`update decision_clock set purged_us = ${max}(purged_us, ${upTo}) where id = 1`.execute(trx)
      const r = await trx
        .deleteFrom('decisions')
        .where('deleted', '=', 1)
        .where('updated_us', '<=', upTo)
        .executeTakeFirst()
      return Number(r.numDeletedRows)
    })
    total += n
    if (n < batch) return total
    await new Promise((resolve) => setImmediate(resolve))
  }
}

/** The live decision of this pair (a tombstone counts as none). */
export function getDecision(db: Db, scopeId: string, fingerprint: string): Promise<DecisionRow | undefined> {
  return db
    .selectFrom('decisions')
    .selectAll()
    .where('scope_type', '=', SCOPE_INSTANCE)
    .where('scope_id', '=', scopeId)
    .where('fingerprint', '=', fingerprint)
    .where('deleted', '=', 0)
    .executeTakeFirst()
}

/**
 * The live decisions of these (instance, fingerprint) pairs, keyed `instance/fingerprint` (one
 * query per instance); with `tombstones`, deleted ones too (the web controller reads those).
 */
export async function decisionsFor(
  db: Db,
  pairs: ReadonlyArray<{ instance_id: string; fingerprint: string }>,
  options: { tombstones?: boolean } = {},
): Promise<Map<string, DecisionRow>> {
  const byInstance = new Map<string, string[]>()
  for (const p of pairs) {
    const list = byInstance.get(p.instance_id)
    if (list) list.push(p.fingerprint)
    else byInstance.set(p.instance_id, [p.fingerprint])
  }
  const out = new Map<string, DecisionRow>()
  for (const [instance, all] of byInstance) {
    // In chunks: both dialects limit the parameters of one statement.
    for (let i = 0; i < all.length; i += 5000) {
      // `deleted` is tested here, not in SQL: with it, SQLite's planner leaves the primary key
      // for the index by time (migration 0012) and reads every live decision.
      const rows = await db
        .selectFrom('decisions')
        .selectAll()
        .where('scope_type', '=', SCOPE_INSTANCE)
        .where('scope_id', '=', instance)
        .where('fingerprint', 'in', all.slice(i, i + 5000))
        .execute()
      for (const r of rows) if (options.tombstones || r.deleted === 0) out.set(`${r.scope_id}/${r.fingerprint}`, r)
    }
  }
  return out
}

/**
 * Insert or replace decisions in one statement (the caller keeps a batch within both dialects'
 * parameter limits); a tombstone of the same pair is revived.
 */
export async function upsertDecisions(db: Db, rows: readonly NewDecision[]): Promise<void> {
  if (rows.length === 0) return
  await db
    .insertInto('decisions')
    .values(rows.map((r) => ({ ...r, deleted: 0 })))
    .onConflict((oc) =>
      oc.columns(['scope_type', 'scope_id', 'fingerprint']).doUpdateSet((eb) => ({
        status: eb.ref('excluded.status'),
        label: eb.ref('excluded.label'),
        updated_us: eb.ref('excluded.updated_us'),
        actor: eb.ref('excluded.actor'),
        source: eb.ref('excluded.source'),
        expires_ms: eb.ref('excluded.expires_ms'),
        evidence: eb.ref('excluded.evidence'),
        deleted: 0,
      })),
    )
    .execute()
}

/** Insert or replace one decision; a tombstone of the same pair is revived. */
export function upsertDecision(db: Db, row: NewDecision): Promise<void> {
  return upsertDecisions(db, [row])
}

/**
 * Turn a live decision into a tombstone at clock time `atUs` (from `tickClock` in the same
 * transaction): status `pending`, empty label, `actor` the deleter. False when there is no
 * live decision.
 */
export async function tombstoneDecision(
  db: Db,
  scopeId: string,
  fingerprint: string,
  atUs: number,
  actor: string,
): Promise<boolean> {
  const r = await db
    .updateTable('decisions')
    .set({
      status: 'pending',
      label: '',
      updated_us: atUs,
      actor,
      source: 'manual',
      expires_ms: null,
      evidence: null,
      deleted: 1,
    })
    .where('scope_type', '=', SCOPE_INSTANCE)
    .where('scope_id', '=', scopeId)
    .where('fingerprint', '=', fingerprint)
    .where('deleted', '=', 0)
    .executeTakeFirst()
  return Number(r.numUpdatedRows) > 0
}

/**
 * Turn every live decision of a scope into a tombstone (as `tombstoneDecision`), the n-th in
 * fingerprint order at `firstUs + n - 1`: reserve that many times with `tickClock` first, in the
 * same transaction. One statement, so the clock's lock is held for one round trip, not one per
 * decision. Returns how many.
 */
export async function tombstoneScope(trx: Transaction<DB>, scopeId: string, firstUs: number, actor: string) {
  const r = await sql`update decisions as d
    set status = 'pending', label = '', updated_us = ${firstUs} + r.n - 1, actor = ${actor},
        source = 'manual', expires_ms = null, evidence = null, deleted = 1
    from (select fingerprint, row_number() over (order by fingerprint) as n from decisions
          where scope_type = ${SCOPE_INSTANCE} and scope_id = ${scopeId} and deleted = 0) as r
    where d.scope_type = ${SCOPE_INSTANCE} and d.scope_id = ${scopeId} and d.fingerprint = r.fingerprint`.execute(trx)
  return Number(r.numAffectedRows ?? 0)
}

export interface DecisionQuery {
  scopeId?: string
  status?: string
  /** `manual` or an automated source such as `web-controller`. */
  source?: string
  limit: number
  offset: number
}

/** Live decisions, newest first. */
export function listDecisions(db: Db, q: DecisionQuery): Promise<DecisionRow[]> {
  let sel = db.selectFrom('decisions').selectAll().where('scope_type', '=', SCOPE_INSTANCE).where('deleted', '=', 0)
  if (q.scopeId !== undefined) sel = sel.where('scope_id', '=', q.scopeId)
  if (q.status !== undefined) sel = sel.where('status', '=', q.status as DecisionRow['status'])
  if (q.source !== undefined) sel = sel.where('source', '=', q.source)
  return sel.orderBy('updated_us', 'desc').limit(q.limit).offset(q.offset).execute()
}

/**
 * Decisions of one instance changed after `sinceUs`, oldest first, at most `limit`; tombstones
 * included (they read as `pending`), so gates revoke what was deleted.
 */
export function decisionsSince(db: Db, scopeId: string, sinceUs: number, limit: number): Promise<DecisionRow[]> {
  return db
    .selectFrom('decisions')
    .selectAll()
    .where('scope_type', '=', SCOPE_INSTANCE)
    .where('scope_id', '=', scopeId)
    .where('updated_us', '>', sinceUs)
    .orderBy('updated_us')
    .limit(limit)
    .execute()
}

/**
 * Who a pull's credential names: a bearer token's hash, or the instance a verified client
 * certificate asks for, with the certificate's fingerprint and names.
 */
export type PullCredential =
  | { tokenHash: string }
  | { instanceId: string; certFingerprint: string; certNames: string[] }

export interface NodeWithDecisions {
  node: NodeRow
  rows: DecisionRow[]
  /** With a certificate: how many nodes pin its fingerprint, and claim one of its names (at most 2). */
  claims?: { byFingerprint: number; byName: number }
}

/**
 * PostgreSQL: a pull's node and `decisionsSince` for that node's own instance, in one statement:
 * the node its token belongs to, or the instance a certificate asks for along with the counts
 * that tell whether the certificate is that node's (auth/principal.ts isCertificateNode);
 * undefined when there is no such node. A gate's incremental pull is then one round trip instead
 * of two: under saturating ingest each wait for the database also waits behind the uploads' work
 * on the event loop, and that second wait was most of the pull's tail
 * (docs/performance/edgegate.md, 2026-12-04). Only that node's decisions are read, and the caller
 * refuses the request before using them when the node may not pull.
 */
export async function nodeWithDecisionsSince(
  db: Kysely<DB>,
  credential: PullCredential,
  sinceUs: number,
  limit: number,
): Promise<NodeWithDecisions | undefined> {
  const byToken = 'tokenHash' in credential
  const claims = byToken
    ? sql``
    : sql`, (select count(*) from nodes where cert_fingerprint = ${credential.certFingerprint})::int as by_fingerprint,
      (select count(*) from (select 1 from nodes where cert_name = any(${credential.certNames}::text[]) limit 2) named)::int
        as by_name`
  const where = byToken ? sql`n.token_hash = ${credential.tokenHash}` : sql`n.instance_id = ${credential.instanceId}`
  const { rows } = await sql<DecisionRow & { node_row: NodeRow; by_fingerprint?: number; by_name?: number }>`
    select to_json(n) as node_row${claims}, d.* from nodes n
    left join lateral (select * from decisions where scope_type = ${SCOPE_INSTANCE} and scope_id = n.instance_id
      and updated_us > ${sinceUs} order by updated_us limit ${limit}) d on true
    where ${where}`.execute(db)
  const first = rows[0]
  if (first === undefined) return undefined
  const found: NodeWithDecisions = {
    node: first.node_row,
    // No decision after the cursor: the outer join's one row, its decision columns null.
    rows: first.scope_id === null ? [] : rows.map(({ node_row: _, by_fingerprint: _f, by_name: _n, ...d }) => d),
  }
  if (!byToken) found.claims = { byFingerprint: first.by_fingerprint!, byName: first.by_name! }
  return found
}
