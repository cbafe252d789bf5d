/**
 * SQL for fingerprint entries. Every function takes the database or a transaction first, so
 * callers own transactions. Writes start with `nextChangeSeq`, whose UPDATE takes SQLite's
 * write lock before any read: a CLI process and `serve` then queue on the busy timeout
 * instead of failing on a stale snapshot. The set rules (128 IPs, ports, sightings) are the
 * kit's, shared with the SSH gate and the control plane.
 */

import type { Database } from '@gatehouse/kit/db/database.ts'
import { memoUntilChange, WalChanges } from '@gatehouse/kit/db/wal-changes.ts'
import { EDGE_LIMITS, mergeIpSet, mergePortSet, mergeSightingLists } from '@gatehouse/kit/edge-limits.ts'
import { deleteEntry, nextChangeSeq, pruneToCap, removeExpiredSightings, setLabel } from '@gatehouse/kit/gate-store.ts'
import { CompiledQuery, type Kysely, sql, type Transaction } from 'kysely'
import type { DB, FingerprintRow, Verdict } from '../db/schema.ts'

export type Db = Kysely<DB> | Transaction<DB>

/** The SQL both gates share is the kit's (packages/kit/src/gate-store.ts). */
export { deleteEntry, pruneToCap, removeExpiredSightings, setLabel }

/** What the gate does with a fingerprint: `unknown` when absent or observed but never decided. */
export type GateStatus = 'unknown' | Verdict

export interface Sighting {
  ip: string
  port: number
  last_seen: string
}

/** One fingerprint's connections gathered since the last flush. */
export interface Observation {
  fingerprint: string
  /** JSON of `{sni, ja3, ja4, ja4_r}` from the latest connection. */
  metadata: string
  count: number
  refused: number
  firstSeen: string
  lastSeen: string
  sightings: Sighting[]
}

/** An entry with its JSON columns decoded. */
export interface FingerprintEntry extends Omit<FingerprintRow, 'ips' | 'ports' | 'sightings' | 'metadata'> {
  ips: string[]
  ports: number[]
  sightings: Sighting[]
  metadata: Record<string, string>
}

function parseJson<T>(text: string, keep: (x: unknown) => boolean, fallback: T): T {
  try {
    const v: unknown = JSON.parse(text)
    if (Array.isArray(fallback)) return (Array.isArray(v) ? v.filter(keep) : fallback) as T
    return (v !== null && typeof v === 'object' && !Array.isArray(v) ? v : fallback) as T
  } catch {
    return fallback
  }
}
const isString = (x: unknown) => typeof x === 'string'
const isPort = (x: unknown) => Number.isInteger(x) && (x as number) >= 0 && (x as number) <= 65535
const isSighting = (x: unknown) => {
  const s = x as Sighting
  return s !== null && typeof s === 'object' && isString(s.ip) && isPort(s.port) && isString(s.last_seen)
}
const sightingTime = (s: Sighting) => Date.parse(s.last_seen)

export function decodeEntry(row: FingerprintRow): FingerprintEntry {
  return {
    ...row,
    ips: parseJson<string[]>(row.ips, isString, []),
    ports: parseJson<number[]>(row.ports, isPort, []),
    sightings: parseJson<Sighting[]>(row.sightings, isSighting, []),
    metadata: parseJson<Record<string, string>>(row.metadata, () => true, {}),
  }
}

const GATE_STATUS_SQL = 'select verdict, decided_at, expires_at from fingerprints where fingerprint = ?'
interface StatusRow {
  verdict: Verdict
  decided_at: string | null
  expires_at: string | null
}

function statusOf(row: StatusRow | undefined, now: number): GateStatus {
  if (!row || (row.verdict === 'pending' && row.decided_at === null)) return 'unknown'
  if (row.expires_at !== null && Date.parse(row.expires_at) <= now) return 'pending'
  return row.verdict
}

/**
 * The verdict the gate applies, read per connection so CLI changes apply at once. An
 * automated block past its `expires_at` counts as pending (the control plane also sends the
 * explicit pending; this covers a gate that cannot reach it).
 */
export async function gateStatus(db: Db, fingerprint: string, now = Date.now()): Promise<GateStatus> {
  const { rows } = await db.executeQuery<StatusRow>(CompiledQuery.raw(GATE_STATUS_SQL, [fingerprint]))
  return statusOf(rows[0], now)
}

/**
 * `gateStatus` for the gate's per-connection lookup: one statement prepared once and run
 * synchronously when the connection is free (the kit's `Database.prepare`). It reads committed
 * data only: it waits behind an open transaction like any query.
 */
export function gateStatusReader(
  store: Pick<Database<DB>, 'prepare' | 'sqlite'>,
): (fingerprint: string, now?: number) => Promise<GateStatus> {
  const query = store.prepare<StatusRow>({ compile: () => CompiledQuery.raw(GATE_STATUS_SQL, ['']) })
  const first = (fingerprint: string) => query.first(fingerprint)
  // The row is remembered until the database changes in any process (kit `WalChanges`); the
  // status is worked out per call, as an automated block expires with time.
  const path = store.sqlite?.location()
  const row = path ? memoUntilChange(new WalChanges(path), first) : first
  return async (fingerprint, now = Date.now()) => statusOf(await row(fingerprint), now)
}

export async function getEntry(db: Db, fingerprint: string): Promise<FingerprintEntry | undefined> {
  const row = await db.selectFrom('fingerprints').selectAll().where('fingerprint', '=', fingerprint).executeTakeFirst()
  return row && decodeEntry(row)
}

export async function listEntries(db: Db): Promise<FingerprintEntry[]> {
  const rows = await db.selectFrom('fingerprints').selectAll().orderBy('last_seen', 'desc').execute()
  return rows.map(decodeEntry)
}

/** Set the verdict (and the label when given); a manual verdict never expires. False when not stored. */
export async function setVerdict(
  db: Kysely<DB>,
  fingerprint: string,
  change: { verdict: Verdict; actor: string; label?: string | undefined; now: string },
): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const seq = await nextChangeSeq(trx)
    const result = await trx
      .updateTable('fingerprints')
      .set({
        verdict: change.verdict,
        decided_at: change.now,
        actor: change.actor,
        expires_at: null,
        ...(change.label === undefined ? {} : { label: change.label }),
        change_seq: seq,
        changed_at: change.now,
      })
      .where('fingerprint', '=', fingerprint)
      .executeTakeFirst()
    return result.numUpdatedRows > 0n
  })
}

/** Metadata over the spec's 64 KiB (impossible from one ClientHello, but bounded anyway) is dropped. */
function boundMetadata(json: string): string {
  return Buffer.byteLength(json, 'utf8') > EDGE_LIMITS.metadataBytes ? '{}' : json
}

/**
 * Merge a batch of observations into the store and enforce the entry cap, in one transaction.
 * New entries start as `pending` with no decision (the gate treats them as unknown).
 * `maxEntries` < 0 means unlimited.
 */
export async function recordObservations(
  db: Kysely<DB>,
  observations: readonly Observation[],
  maxEntries: number,
  now: string,
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
      const ips = o.sightings.map((s) => s.ip)
      const ports = o.sightings.map((s) => s.port)
      const old = existing ? decodeEntry({ ...existing, metadata: '{}' } as FingerprintRow) : undefined
      const values = {
        metadata: boundMetadata(o.metadata),
        ips: JSON.stringify(mergeIpSet(old?.ips ?? [], ips)),
        ports: JSON.stringify(mergePortSet(old?.ports ?? [], ports)),
        sightings: JSON.stringify(mergeSightingLists(old?.sightings ?? [], o.sightings, sightingTime)),
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
            refused_count: o.refused,
            first_seen: o.firstSeen,
            last_seen: o.lastSeen,
            ...values,
          })
          .execute()
        continue
      }
      await trx
        .updateTable('fingerprints')
        .set({
          count: sql`count + ${o.count}`,
          refused_count: sql`refused_count + ${o.refused}`,
          first_seen: existing.first_seen < o.firstSeen ? existing.first_seen : o.firstSeen,
          last_seen: existing.last_seen > o.lastSeen ? existing.last_seen : o.lastSeen,
          ...values,
        })
        .where('fingerprint', '=', o.fingerprint)
        .execute()
    }
    return { pruned: await pruneToCap(trx, maxEntries) }
  })
}
