/**
 * The SQL both gates (sshproxy, tlsgate) run on their SQLite stores' common tables: the
 * `fingerprints` columns they share (verdict, decision, label, counts, times, bounded JSON sets,
 * change sequence), `change_counter`, `sync_state`. Each gate keeps its own table types (with
 * its own extra columns) and migrations; these functions see only the shared columns. Every
 * function takes the database or a transaction first, so callers own transactions. Writes start
 * with `nextChangeSeq`, whose UPDATE takes SQLite's write lock before any read: a CLI process and
 * `serve` then queue on the busy timeout instead of failing on a stale snapshot.
 */
import { type Generated, type Kysely, sql, type Transaction } from 'kysely'
import { boundMetadata, mergeStoredSets, type StoredSighting } from './gate-store-sets.ts'

// Its parts by concern, for the gates to import from one place.
export * from './gate-pulled.ts'
export * from './gate-store-sets.ts'

export type GateVerdict = 'approved' | 'blocked' | 'pending'

/** The `fingerprints` columns every gate has. */
export interface GateFingerprintColumns {
  fingerprint: string
  verdict: GateVerdict
  /** NULL: nobody (operator or control plane) has decided; the gate treats the entry as unknown. */
  decided_at: string | null
  actor: string | null
  /**
   * When a pulled decision stops applying (the control plane's `expires_at`: an automated block,
   * or a manual decision made for a while); after it the entry counts as pending, so a gate cut
   * off from the control plane still ends it on time. NULL: no expiry (and the gate's own verdicts).
   */
  expires_at: string | null
  label: Generated<string>
  count: Generated<number>
  first_seen: string
  last_seen: string
  metadata: Generated<string>
  ips: Generated<string>
  ports: Generated<string>
  sightings: Generated<string>
  change_seq: Generated<number>
  changed_at: string
  /**
   * 1 when the verdict was pulled from the control plane, 0 when the gate's own (its CLI) or
   * none: a resync after the control plane's database went back in time drops pulled verdicts
   * it no longer has, never the gate's own.
   */
  pulled: Generated<number>
}

export interface GateStoreDB {
  fingerprints: GateFingerprintColumns
  change_counter: { id: number; value: number }
  sync_state: { key: string; value: string; updated_at: string }
}

type Db = Kysely<GateStoreDB> | Transaction<GateStoreDB>

/** Allocate the next change sequence number (and take the write lock). */
export async function nextChangeSeq(db: Db): Promise<number> {
  const row = await db
    .updateTable('change_counter')
    .set({ value: sql`value + 1` })
    .where('id', '=', 1)
    .returning('value')
    .executeTakeFirstOrThrow()
  return row.value
}

/** Replace a label. False when the fingerprint is not stored. */
export async function setLabel(db: Kysely<GateStoreDB>, fingerprint: string, label: string, now: string) {
  return db.transaction().execute(async (trx) => {
    const seq = await nextChangeSeq(trx)
    const result = await trx
      .updateTable('fingerprints')
      .set({ label, change_seq: seq, changed_at: now })
      .where('fingerprint', '=', fingerprint)
      .executeTakeFirst()
    return result.numUpdatedRows > 0n
  })
}

export async function deleteEntry(db: Db, fingerprint: string): Promise<boolean> {
  const result = await db.deleteFrom('fingerprints').where('fingerprint', '=', fingerprint).executeTakeFirst()
  return result.numDeletedRows > 0n
}

/**
 * Delete entries beyond `maxEntries` (< 0: no cap): first the undecided, least recently seen
 * first, and only when those are not enough the decided pending and blocked ones, least recently
 * seen first. Approved entries are never pruned, unless their approval has expired (at `now`,
 * an ISO time): the gate treats those as pending. Undecided first because a client that varies
 * its KEXINIT makes a new entry per connection: pruning by age alone, a flood of those would
 * push out an old block, and with `--allow-unknown` the blocked client would be let in as
 * unknown (a pulled block would not come back either: the policy cursor is past it).
 */
export async function pruneToCap(db: Db, maxEntries: number, now = new Date().toISOString()): Promise<number> {
  if (maxEntries < 0) return 0
  const { n } = await db
    .selectFrom('fingerprints')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow()
  let excess = Number(n) - maxEntries
  if (excess <= 0) return 0
  const undecided = db
    .selectFrom('fingerprints')
    .select('fingerprint')
    .where('verdict', '=', 'pending')
    .where('decided_at', 'is', null)
    .orderBy('last_seen', 'asc')
    .orderBy('fingerprint', 'asc')
    .limit(excess)
  const first = await db.deleteFrom('fingerprints').where('fingerprint', 'in', undecided).executeTakeFirst()
  const pruned = Number(first.numDeletedRows)
  excess -= pruned
  if (excess <= 0) return pruned
  const decided = db
    .selectFrom('fingerprints')
    .select('fingerprint')
    // Expiries are UTC ISO text (kit gate-pulled.ts `expiryOf`), so they compare as text.
    .where((eb) => eb.or([eb('verdict', '!=', 'approved'), eb('expires_at', '<=', now)]))
    .orderBy('last_seen', 'asc')
    .orderBy('fingerprint', 'asc')
    .limit(excess)
  const then = await db.deleteFrom('fingerprints').where('fingerprint', 'in', decided).executeTakeFirst()
  return pruned + Number(then.numDeletedRows)
}

/** Drop sightings last seen before `before` (aggregates, verdicts and labels stay). SQLite JSON functions. */
export async function removeExpiredSightings(db: Db, before: string): Promise<number> {
  const result = await sql`
    update fingerprints
       set sightings = (select coalesce(json_group_array(json(value)), '[]') from json_each(fingerprints.sightings)
                         where json_extract(value, '$.last_seen') >= ${before})
     where json_valid(sightings)
       and exists (select 1 from json_each(fingerprints.sightings) where json_extract(value, '$.last_seen') < ${before})
  `.execute(db)
  return Number(result.numAffectedRows ?? 0n)
}

/** A manual or pulled verdict for a stored fingerprint. */
export interface VerdictChange {
  verdict: GateVerdict
  actor: string
  /** Replaces the label when given. */
  label?: string | undefined
  now: string
  /** RFC 3339: the verdict ends then (`block --for 1h`); absent: it does not expire. */
  expiresAt?: string | undefined
}

/**
 * Set the verdict (and the label when given), with the expiry given or none: it replaces a pulled
 * verdict's. False when the fingerprint is not stored.
 */
export async function setVerdict(
  db: Kysely<GateStoreDB>,
  fingerprint: string,
  change: VerdictChange,
): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const seq = await nextChangeSeq(trx)
    const result = await trx
      .updateTable('fingerprints')
      .set({
        verdict: change.verdict,
        decided_at: change.now,
        actor: change.actor,
        pulled: 0,
        expires_at: change.expiresAt ?? null,
        ...(change.label === undefined ? {} : { label: change.label }),
        change_seq: seq,
        changed_at: change.now,
      })
      .where('fingerprint', '=', fingerprint)
      .executeTakeFirst()
    return result.numUpdatedRows > 0n
  })
}

/** One fingerprint's connections gathered since the last flush, in the columns every gate has. */
export interface GateObservation<S extends StoredSighting = StoredSighting> {
  fingerprint: string
  /** JSON; the latest connection's. */
  metadata: string
  count: number
  firstSeen: string
  lastSeen: string
  sightings: S[]
}

/** The gate's own columns of an observed entry: on insert, and on update (counters as SQL). */
export interface OwnObservationColumns<O> {
  insert(o: O): Record<string, unknown>
  update(o: O): Record<string, unknown>
}

/**
 * Merge a batch of observations into the store and enforce the entry cap, in one transaction.
 * New entries start as `pending` with no decision (the gate treats them as unknown); known ones
 * add the counts, widen the first/last seen times, take the latest metadata and merge the sets.
 * `maxEntries` < 0 means unlimited.
 */
export async function recordObservations<O extends GateObservation>(
  db: Kysely<GateStoreDB>,
  observations: readonly O[],
  maxEntries: number,
  now: string,
  own: OwnObservationColumns<O>,
): Promise<{ pruned: number }> {
  if (observations.length === 0) return { pruned: 0 }
  return db.transaction().execute(async (trx) => {
    const seq = await nextChangeSeq(trx)
    for (const o of observations) {
      const existing = await trx
        .selectFrom('fingerprints')
        .select(['first_seen', 'last_seen', 'ips', 'ports', 'sightings'])
        .where('fingerprint', '=', o.fingerprint)
        .executeTakeFirst()
      const values = {
        metadata: boundMetadata(o.metadata),
        ...mergeStoredSets(existing, o.sightings),
        change_seq: seq,
        changed_at: now,
      }
      if (!existing) {
        await trx
          .insertInto('fingerprints')
          .values({
            fingerprint: o.fingerprint,
            verdict: 'pending',
            decided_at: null,
            actor: null,
            expires_at: null,
            count: o.count,
            first_seen: o.firstSeen,
            last_seen: o.lastSeen,
            ...values,
            ...own.insert(o),
          })
          .execute()
        continue
      }
      await trx
        .updateTable('fingerprints')
        .set({
          count: sql`count + ${o.count}`,
          first_seen: existing.first_seen < o.firstSeen ? existing.first_seen : o.firstSeen,
          last_seen: existing.last_seen > o.lastSeen ? existing.last_seen : o.lastSeen,
          ...values,
          ...own.update(o),
        })
        .where('fingerprint', '=', o.fingerprint)
        .execute()
    }
    return { pruned: await pruneToCap(trx, maxEntries, now) }
  })
}

/** Rows whose `change_seq` is above `afterSeq`, oldest change first (the upload page), as the gate's row type. */
export async function changedRowsSince<Row>(db: Db, afterSeq: number, limit: number): Promise<Row[]> {
  const rows = await db
    .selectFrom('fingerprints')
    .selectAll()
    .where('change_seq', '>', afterSeq)
    .orderBy('change_seq', 'asc')
    .orderBy('fingerprint', 'asc')
    .limit(limit)
    .execute()
  return rows as unknown as Row[]
}
