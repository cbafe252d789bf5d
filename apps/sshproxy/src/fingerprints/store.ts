/**
 * SQL for fingerprint entries. Every function takes the database or a transaction first, so
 * callers own transactions. Writes start with `nextChangeSeq`, whose UPDATE takes SQLite's
 * write lock before any read: a CLI process and `serve` then queue on the busy timeout
 * instead of failing on a stale snapshot.
 */

import type { Database } from '@gatehouse/kit/db/database.ts'
import { memoUntilChange, WalChanges } from '@gatehouse/kit/db/wal-changes.ts'
import { deleteEntry, nextChangeSeq, pruneToCap, removeExpiredSightings, setLabel } from '@gatehouse/kit/gate-store.ts'
import { CompiledQuery, type Kysely, sql, type Transaction } from 'kysely'
import type { DB, FingerprintRow, Verdict } from '../db/schema.ts'
import {
  boundMetadata,
  isPort,
  isSighting,
  isString,
  MAX_METADATA_BYTES,
  MAX_VALUES,
  mergeIps,
  mergePorts,
  mergeSightings,
  parseArray,
  type Sighting,
} from './bounds.ts'

export type Db = Kysely<DB> | Transaction<DB>

/** The SQL both gates share is the kit's (packages/kit/src/gate-store.ts). */
export { deleteEntry, nextChangeSeq, pruneToCap, removeExpiredSightings, setLabel }

/** What the gate does with a fingerprint: `unknown` when absent or observed but never decided. */
export type GateStatus = 'unknown' | Verdict

/** One fingerprint's observations gathered since the last flush. */
export interface Observation {
  fingerprint: string
  identification: string
  clientVersion: string
  /** JSON of the KEXINIT lists. */
  metadata: string
  count: number
  /** Of `count`, connections let through as unknown under `--allow-unknown`. */
  enrolled: number
  firstSeen: string
  lastSeen: string
  sightings: Sighting[]
}

/** An entry with its JSON columns decoded. */
export interface FingerprintEntry extends Omit<FingerprintRow, 'ips' | 'ports' | 'sightings' | 'metadata'> {
  ips: string[]
  ports: number[]
  sightings: Sighting[]
  metadata: Record<string, unknown>
}

export function decodeEntry(row: FingerprintRow): FingerprintEntry {
  let metadata: Record<string, unknown> = {}
  try {
    const v: unknown = JSON.parse(row.metadata)
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) metadata = v as Record<string, unknown>
  } catch {
    // trimmed or damaged metadata reads as empty
  }
  return {
    ...row,
    ips: parseArray(row.ips, isString),
    ports: parseArray(row.ports, isPort),
    sightings: parseArray(row.sightings, isSighting),
    metadata,
  }
}

const GATE_STATUS_SQL = 'select verdict, decided_at from fingerprints where fingerprint = ?'
interface StatusRow {
  verdict: Verdict
  decided_at: string | null
}

function statusOf(row: StatusRow | undefined): GateStatus {
  if (!row || (row.verdict === 'pending' && row.decided_at === null)) return 'unknown'
  return row.verdict
}

/** The verdict the gate applies, read per connection so CLI changes apply at once. */
export async function gateStatus(db: Db, fingerprint: string): Promise<GateStatus> {
  const { rows } = await db.executeQuery<StatusRow>(CompiledQuery.raw(GATE_STATUS_SQL, [fingerprint]))
  return statusOf(rows[0])
}

/**
 * `gateStatus` for the gate's per-connection lookup: one statement prepared once and run
 * synchronously when the connection is free (the kit's `Database.prepare`), so a lookup costs
 * what SQLite costs instead of a Kysely query's round through the driver. It reads committed
 * data only: it waits behind an open transaction like any query.
 */
export function gateStatusReader(
  store: Pick<Database<DB>, 'prepare' | 'sqlite'>,
): (fingerprint: string) => Promise<GateStatus> {
  const query = store.prepare<StatusRow>({ compile: () => CompiledQuery.raw(GATE_STATUS_SQL, ['']) })
  const read = async (fingerprint: string) => statusOf(await query.first(fingerprint))
  // Remembered until the database changes in any process (kit `WalChanges`): still exact.
  const path = store.sqlite?.location()
  return path ? memoUntilChange(new WalChanges(path), read) : read
}

export async function getEntry(db: Db, fingerprint: string): Promise<FingerprintEntry | undefined> {
  const row = await db.selectFrom('fingerprints').selectAll().where('fingerprint', '=', fingerprint).executeTakeFirst()
  return row && decodeEntry(row)
}

export async function listEntries(db: Db): Promise<FingerprintEntry[]> {
  const rows = await db.selectFrom('fingerprints').selectAll().orderBy('last_seen', 'desc').execute()
  return rows.map(decodeEntry)
}

/** Set the verdict (and the label when given). Returns false when the fingerprint is not stored. */
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
        ...(change.label === undefined ? {} : { label: change.label }),
        change_seq: seq,
        changed_at: change.now,
      })
      .where('fingerprint', '=', fingerprint)
      .executeTakeFirst()
    return result.numUpdatedRows > 0n
  })
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
      const metadata = boundMetadata(o.metadata)
      if (!existing) {
        await trx
          .insertInto('fingerprints')
          .values({
            fingerprint: o.fingerprint,
            verdict: 'pending',
            decided_at: null,
            actor: null,
            label: '',
            count: o.count,
            first_seen: o.firstSeen,
            last_seen: o.lastSeen,
            identification: o.identification,
            client_version: o.clientVersion,
            metadata,
            ips: JSON.stringify(mergeIps([], ips)),
            ports: JSON.stringify(mergePorts([], ports)),
            sightings: JSON.stringify(mergeSightings([], o.sightings)),
            enrolled_count: o.enrolled,
            change_seq: seq,
            changed_at: now,
          })
          .execute()
        continue
      }
      await trx
        .updateTable('fingerprints')
        .set({
          count: sql`count + ${o.count}`,
          enrolled_count: sql`enrolled_count + ${o.enrolled}`,
          first_seen: [existing.first_seen, o.firstSeen].sort()[0]!,
          last_seen: [existing.last_seen, o.lastSeen].sort()[1]!,
          identification: o.identification,
          client_version: o.clientVersion,
          metadata,
          ips: JSON.stringify(mergeIps(parseArray(existing.ips, isString), ips)),
          ports: JSON.stringify(mergePorts(parseArray(existing.ports, isPort), ports)),
          sightings: JSON.stringify(mergeSightings(parseArray(existing.sightings, isSighting), o.sightings)),
          change_seq: seq,
          changed_at: now,
        })
        .where('fingerprint', '=', o.fingerprint)
        .execute()
    }
    return { pruned: await pruneToCap(trx, maxEntries) }
  })
}

/**
 * Bring entries written by older or other versions within the bounds: oversized metadata is
 * dropped and history beyond 128 values trimmed; verdicts, labels and counts stay.
 */
export async function trimOversized(db: Kysely<DB>): Promise<number> {
  const tooMany = (col: string) =>
    sql`iif(json_valid(${sql.ref(col)}), json_array_length(${sql.ref(col)}) > ${MAX_VALUES}, 1) = 1`
  const rows = await db
    .selectFrom('fingerprints')
    .select(['fingerprint', 'metadata', 'ips', 'ports', 'sightings'])
    .where(
      sql<boolean>`length(cast(metadata as blob)) > ${MAX_METADATA_BYTES} or ${tooMany('ips')} or ${tooMany('ports')} or ${tooMany('sightings')}`,
    )
    .execute()
  for (const row of rows) {
    await db
      .updateTable('fingerprints')
      .set({
        metadata: boundMetadata(row.metadata),
        ips: JSON.stringify(mergeIps(parseArray(row.ips, isString), [])),
        ports: JSON.stringify(mergePorts(parseArray(row.ports, isPort), [])),
        sightings: JSON.stringify(mergeSightings(parseArray(row.sightings, isSighting), [])),
      })
      .where('fingerprint', '=', row.fingerprint)
      .execute()
  }
  return rows.length
}
