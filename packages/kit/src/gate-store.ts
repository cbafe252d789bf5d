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
import { parseTimestampMicros } from './timestamps.ts'

export type GateVerdict = 'approved' | 'blocked' | 'pending'

/** The `fingerprints` columns every gate has. */
export interface GateFingerprintColumns {
  fingerprint: string
  verdict: GateVerdict
  /** NULL: nobody (operator or control plane) has decided; the gate treats the entry as unknown. */
  decided_at: string | null
  actor: string | null
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

/** Delete the oldest non-approved entries beyond `maxEntries` (approved entries are never pruned; < 0: no cap). */
export async function pruneToCap(db: Db, maxEntries: number): Promise<number> {
  if (maxEntries < 0) return 0
  const { n } = await db
    .selectFrom('fingerprints')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow()
  const excess = Number(n) - maxEntries
  if (excess <= 0) return 0
  const victims = db
    .selectFrom('fingerprints')
    .select('fingerprint')
    .where('verdict', '!=', 'approved')
    .orderBy('last_seen', 'asc')
    .orderBy('fingerprint', 'asc')
    .limit(excess)
  const result = await db.deleteFrom('fingerprints').where('fingerprint', 'in', victims).executeTakeFirst()
  return Number(result.numDeletedRows)
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

export async function getSyncState(db: Db, key: string): Promise<string | undefined> {
  const row = await db.selectFrom('sync_state').select('value').where('key', '=', key).executeTakeFirst()
  return row?.value
}

export async function setSyncState(db: Db, key: string, value: string, now: string): Promise<void> {
  await db
    .insertInto('sync_state')
    .values({ key, value, updated_at: now })
    .onConflict((oc) => oc.column('key').doUpdateSet({ value, updated_at: now }))
    .execute()
}

/**
 * -1, 0 or 1 as `a` is before, equal to or after `b`, as instants: the control plane writes 6
 * fraction digits and the gates 3, so the text does not sort. Text that is not a time sorts first.
 */
export function compareTimes(a: string, b: string): number {
  const [x, y] = [parseTimestampMicros(a) ?? Number.NaN, parseTimestampMicros(b) ?? Number.NaN]
  if (Number.isNaN(x) || Number.isNaN(y)) return Number.isNaN(x) ? (Number.isNaN(y) ? 0 : -1) : 1
  return x < y ? -1 : x > y ? 1 : 0
}
