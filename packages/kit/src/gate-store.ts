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
import { EDGE_LIMITS, mergeIpSet, mergePortSet, mergeSightingLists } from './edge-limits.ts'
import { parseTimestampMicros } from './timestamps.ts'

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

/** A sighting as a gate stores it; a gate may add fields (sshproxy: its relay's address). */
export interface StoredSighting {
  ip: string
  port: number
  last_seen: string
}

/** An entry's three bounded JSON sets, as stored. */
export interface StoredSets {
  ips: string
  ports: string
  sightings: string
}

/** A stored entry's sets and metadata, decoded. */
export interface DecodedSets<S extends StoredSighting> {
  ips: string[]
  ports: number[]
  sightings: S[]
  metadata: Record<string, unknown>
}

const isString = (x: unknown): x is string => typeof x === 'string'
const isPort = (x: unknown): x is number => Number.isInteger(x) && (x as number) >= 0 && (x as number) <= 65535
const isSighting = (x: unknown): x is StoredSighting => {
  const s = x as StoredSighting
  return s !== null && typeof s === 'object' && isString(s.ip) && isPort(s.port) && isString(s.last_seen)
}
const sightingTime = (s: StoredSighting) => Date.parse(s.last_seen)

/** A stored JSON array's elements that pass `keep`; anything that is not an array reads as empty. */
function parseArray<T>(json: string, keep: (x: unknown) => x is T): T[] {
  try {
    const v: unknown = JSON.parse(json)
    return Array.isArray(v) ? v.filter(keep) : []
  } catch {
    return []
  }
}

/** Decode an entry's sets and metadata; trimmed or damaged JSON reads as empty, never as an error. */
export function decodeStoredSets<S extends StoredSighting = StoredSighting>(
  row: StoredSets & { metadata: string },
): DecodedSets<S> {
  let metadata: Record<string, unknown> = {}
  try {
    const v: unknown = JSON.parse(row.metadata)
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) metadata = v as Record<string, unknown>
  } catch {
    // trimmed or damaged metadata reads as empty
  }
  return {
    ips: parseArray(row.ips, isString),
    ports: parseArray(row.ports, isPort),
    sightings: parseArray(row.sightings, isSighting) as S[],
    metadata,
  }
}

/**
 * The newest sighting per IP and port (at the same instant the added one), newest first, the 128
 * most recent kept. Times compare as instants: RFC 3339 texts with other fraction digits do not
 * sort as text.
 */
export function mergeSightings<S extends StoredSighting>(existing: readonly S[], added: readonly S[]): S[] {
  return mergeSightingLists(existing, added, sightingTime)
}

/**
 * An entry's sets with `added` sightings merged in (`stored` undefined: a new entry), under the
 * kit's set rules (edge-limits.ts, shared with the control plane): 128 IPs and ports each, the
 * first in sorted order, and the 128 most recent sightings. Also brings sets written by other
 * versions within those bounds (`added` empty).
 */
export function mergeStoredSets<S extends StoredSighting>(
  stored: StoredSets | undefined,
  added: readonly S[],
): StoredSets {
  const old = stored ? decodeStoredSets<S>({ ...stored, metadata: '{}' }) : undefined
  const ips = added.map((s) => s.ip)
  const ports = added.map((s) => s.port)
  return {
    ips: JSON.stringify(mergeIpSet(old?.ips ?? [], ips)),
    ports: JSON.stringify(mergePortSet(old?.ports ?? [], ports)),
    sightings: JSON.stringify(mergeSightings(old?.sightings ?? [], added)),
  }
}

/** Metadata over the spec's 64 KiB is dropped (`{}`): never possible from one handshake, bounded anyway. */
export function boundMetadata(json: string): string {
  return Buffer.byteLength(json, 'utf8') > EDGE_LIMITS.metadataBytes ? '{}' : json
}

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
 * seen first. Approved entries are never pruned. Undecided first because a client that varies
 * its KEXINIT makes a new entry per connection: pruning by age alone, a flood of those would
 * push out an old block, and with `--allow-unknown` the blocked client would be let in as
 * unknown (a pulled block would not come back either: the policy cursor is past it).
 */
export async function pruneToCap(db: Db, maxEntries: number): Promise<number> {
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
    .where('verdict', '!=', 'approved')
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

/** `sync_state` keys of the control-plane sync: the last acknowledged upload and the policy cursor. */
export const UPLOAD_ACK_KEY = 'upload_ack_seq'
export const POLICY_CURSOR_KEY = 'policy_cursor'

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
    return { pruned: await pruneToCap(trx, maxEntries) }
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

/** A decision pulled from the control plane, in the fields every gate applies. */
export interface PulledDecision {
  fingerprint: string
  status: GateVerdict
  label: string
  updated_at: string
  actor: string
  /** RFC 3339; absent: the decision does not expire. */
  expires_at?: string | undefined
}

/** A pulled decision's expiry as stored: NULL when it has none, or none a gate can read. */
function expiryOf(d: PulledDecision): string | null {
  return typeof d.expires_at === 'string' && parseTimestampMicros(d.expires_at) !== undefined ? d.expires_at : null
}

/**
 * Apply pulled decisions in one transaction (all or none). A decision older than the local one
 * is skipped (last writer wins, by instant); unknown fingerprints get an entry with no
 * observations, which the entry cap bounds. Each carries its expiry (`expires_at`). `cursor`,
 * when given, is stored in the same transaction. With `authoritative` (a resync's full pull),
 * the control plane's answer also replaces a verdict pulled earlier that is newer (one its
 * database lost); the gate's own verdicts still win by time. Returns how many entries changed.
 */
export async function applyDecisions<D extends PulledDecision>(
  db: Kysely<GateStoreDB>,
  decisions: readonly D[],
  now: string,
  cursor?: { key: string; value: string },
  authoritative = false,
): Promise<number> {
  return db.transaction().execute(async (trx) => {
    let changed = 0
    for (const d of decisions) {
      const current = await trx
        .selectFrom('fingerprints')
        .select(['decided_at', 'pulled'])
        .where('fingerprint', '=', d.fingerprint)
        .executeTakeFirst()
      const set = {
        verdict: d.status,
        label: d.label,
        decided_at: d.updated_at,
        actor: d.actor,
        pulled: 1,
        expires_at: expiryOf(d),
      }
      if (!current) {
        await trx
          .insertInto('fingerprints')
          .values({
            fingerprint: d.fingerprint,
            ...set,
            first_seen: d.updated_at,
            last_seen: d.updated_at,
            changed_at: now,
          })
          .execute()
        changed++
      } else if (
        current.decided_at === null ||
        (authoritative && current.pulled === 1) ||
        compareTimes(current.decided_at, d.updated_at) <= 0
      ) {
        await trx.updateTable('fingerprints').set(set).where('fingerprint', '=', d.fingerprint).execute()
        changed++
      }
    }
    if (cursor) await setSyncState(trx, cursor.key, cursor.value, now)
    return changed
  })
}

/**
 * The migration both gates run to add `pulled`: rows already there cannot tell where their
 * verdict came from, so they start as the gate's own, and the policy cursor is cleared so the
 * next sync pulls every decision again and marks those the control plane holds.
 */
export async function addVerdictSource(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('fingerprints')
    .addColumn('pulled', 'integer', (c) => c.notNull().defaultTo(0))
    .execute()
  await sql`delete from sync_state where key = ${POLICY_CURSOR_KEY}`.execute(db)
}

/** `sync_state` key: set while a resync's full pull is unfinished, so a restart begins it again. */
export const POLICY_RESYNC_KEY = 'policy_resync'

/**
 * The end of a resync: every verdict pulled earlier that the control plane's full answer does
 * not hold (`listed`) goes back to undecided; the gate's own verdicts stay. Clears the resync mark in the same
 * transaction. Returns the fingerprints reset.
 */
export async function dropUnlistedPulled(
  db: Kysely<GateStoreDB>,
  listed: ReadonlySet<string>,
  now: string,
): Promise<string[]> {
  return db.transaction().execute(async (trx) => {
    const pulled = await trx.selectFrom('fingerprints').select('fingerprint').where('pulled', '=', 1).execute()
    const gone = pulled.map((r) => r.fingerprint).filter((fp) => !listed.has(fp))
    for (let i = 0; i < gone.length; i += 500) {
      await trx
        .updateTable('fingerprints')
        .set({
          verdict: 'pending',
          decided_at: null,
          actor: null,
          label: '',
          pulled: 0,
          expires_at: null,
          changed_at: now,
        })
        .where('fingerprint', 'in', gone.slice(i, i + 500))
        .execute()
    }
    await trx.deleteFrom('sync_state').where('key', '=', POLICY_RESYNC_KEY).execute()
    return gone
  })
}
