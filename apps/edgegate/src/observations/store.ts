/**
 * SQL for fingerprint aggregates: listing, lookup, sighting retention. Merging observations into
 * them is group-merge.ts.
 */
import type { DatabaseKind } from '@gatehouse/kit'
import type { Kysely, Transaction } from 'kysely'
import type { DB, FingerprintRow } from '../db/schema.ts'
import { encodeSightings, mergeSightings } from './merge.ts'

type Db = Kysely<DB> | Transaction<DB>

export interface FingerprintQuery {
  instanceId?: string
  limit: number
  offset: number
}

export function listFingerprints(db: Db, q: FingerprintQuery): Promise<FingerprintRow[]> {
  let sel = db.selectFrom('fingerprints').selectAll()
  if (q.instanceId !== undefined) sel = sel.where('instance_id', '=', q.instanceId)
  return sel
    .orderBy('last_seen_ms', 'desc')
    .orderBy('instance_id')
    .orderBy('fingerprint')
    .limit(q.limit)
    .offset(q.offset)
    .execute()
}

export function getFingerprint(db: Db, instanceId: string, fingerprint: string) {
  return db
    .selectFrom('fingerprints')
    .selectAll()
    .where('instance_id', '=', instanceId)
    .where('fingerprint', '=', fingerprint)
    .executeTakeFirst()
}

/**
 * Remove sightings older than the cutoff. Aggregates (counts, first/last seen, IP and port
 * sets, metadata) and decisions are never touched. Returns how many rows were rewritten.
 */
export async function sweepSightings(db: Kysely<DB>, kind: DatabaseKind, cutoffMs: number): Promise<number> {
  let rewritten = 0
  for (;;) {
    const keys = await db
      .selectFrom('fingerprints')
      .select(['instance_id', 'fingerprint'])
      .where('oldest_sighting_ms', '<', cutoffMs)
      .limit(200)
      .execute()
    if (keys.length === 0) return rewritten
    for (const key of keys) {
      await db.transaction().execute(async (trx) => {
        let q = trx
          .selectFrom('fingerprints')
          .select(['sightings'])
          .where('instance_id', '=', key.instance_id)
          .where('fingerprint', '=', key.fingerprint)
        if (kind === 'postgres') q = q.forUpdate()
        const row = await q.executeTakeFirst()
        if (!row) return
        const kept = mergeSightings(JSON.parse(row.sightings), [], cutoffMs)
        await trx
          .updateTable('fingerprints')
          .set({
            sightings: encodeSightings(kept),
            oldest_sighting_ms: kept.length ? Math.min(...kept.map((s) => s.last_seen_ms)) : null,
          })
          .where('instance_id', '=', key.instance_id)
          .where('fingerprint', '=', key.fingerprint)
          .execute()
      })
      rewritten++
    }
  }
}

/** A fingerprint aggregate with the status of its live decision (null: none yet). */
export type FingerprintWithDecision = FingerprintRow & { decision_status: string | null; decision_label: string | null }

/**
 * Fingerprints joined with their live decision, most recently seen first; `status` filters by
 * the decision (`none`: no decision yet). For the CLI's `fingerprint list`.
 */
export function listFingerprintsByDecision(
  db: Db,
  q: FingerprintQuery & {
    status?: 'approved' | 'blocked' | 'pending' | 'none'
    /** Only those last seen at or after this time (ms). */
    seenSinceMs?: number
    /** Leave out those the gate reports with one of these statuses. */
    reportedNot?: readonly string[]
  },
): Promise<FingerprintWithDecision[]> {
  let sel = db
    .selectFrom('fingerprints as f')
    .leftJoin('decisions as d', (j) =>
      j
        .onRef('d.scope_id', '=', 'f.instance_id')
        .onRef('d.fingerprint', '=', 'f.fingerprint')
        .on('d.scope_type', '=', 'instance')
        .on('d.deleted', '=', 0),
    )
    .selectAll('f')
    .select(['d.status as decision_status', 'd.label as decision_label'])
  if (q.instanceId !== undefined) sel = sel.where('f.instance_id', '=', q.instanceId)
  if (q.status === 'none') sel = sel.where('d.status', 'is', null)
  else if (q.status !== undefined) sel = sel.where('d.status', '=', q.status)
  if (q.seenSinceMs !== undefined) sel = sel.where('f.last_seen_ms', '>=', q.seenSinceMs)
  if (q.reportedNot !== undefined && q.reportedNot.length > 0)
    sel = sel.where('f.reported_status', 'not in', [...q.reportedNot])
  return sel
    .orderBy('f.last_seen_ms', 'desc')
    .orderBy('f.instance_id')
    .orderBy('f.fingerprint')
    .limit(q.limit)
    .offset(q.offset)
    .execute()
}

/** Fingerprints without a live decision, or with a pending one: what is waiting for an administrator. */
export async function countWaiting(db: Db): Promise<number> {
  const r = await db
    .selectFrom('fingerprints as f')
    .leftJoin('decisions as d', (j) =>
      j
        .onRef('d.scope_id', '=', 'f.instance_id')
        .onRef('d.fingerprint', '=', 'f.fingerprint')
        .on('d.scope_type', '=', 'instance')
        .on('d.deleted', '=', 0),
    )
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where((eb) => eb.or([eb('d.status', 'is', null), eb('d.status', '=', 'pending')]))
    .executeTakeFirstOrThrow()
  return Number(r.n)
}
