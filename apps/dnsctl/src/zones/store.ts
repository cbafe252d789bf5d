/** SQL for the zone registry and the history store. First argument: the database or a transaction. */
import type { Kysely, Transaction } from 'kysely'
import type { DB, HistoryRow, ZoneRow } from '../db/schema.ts'
import { gunzipZoneText, gzipZoneText } from './history-text.ts'

type Db = Kysely<DB> | Transaction<DB>

export function listZoneRows(db: Db): Promise<ZoneRow[]> {
  return db.selectFrom('zones').selectAll().orderBy('name').execute()
}

export async function insertZoneRow(db: Db, row: ZoneRow): Promise<void> {
  await db
    .insertInto('zones')
    .values(row)
    .onConflict((oc) => oc.column('name').doUpdateSet({ role: row.role }))
    .execute()
}

export async function setZoneRole(db: Db, name: string, role: ZoneRow['role']): Promise<void> {
  await db.updateTable('zones').set({ role }).where('name', '=', name).execute()
}

export async function deleteZoneRow(db: Db, name: string): Promise<void> {
  await db.deleteFrom('zones').where('name', '=', name).execute()
}

/** A prior revision as the pipeline saves it (the text is compressed on the way in). */
export interface SavedRevision {
  zone: string
  revision: string
  role: 'primary' | 'secondary'
  serial: number
  zone_text: string
  saved_at: string
  request_id: string
  /** What replaced it: changes, import or delete. */
  reason: string
}

/** What a history listing shows of a saved revision: everything but the text. */
export type HistorySummary = Omit<HistoryRow, 'zone_gzip'>

/** A saved revision with its zone text. */
export type HistoryEntry = HistorySummary & { zone_text: string }

/** Save a prior revision; with `keep` > 0, only the newest `keep` revisions of the zone stay. */
export async function saveHistory(db: Db, saved: SavedRevision, keep = 0): Promise<void> {
  const { zone_text, ...row } = saved
  await db
    .insertInto('zone_history')
    .values({ ...row, zone_gzip: await gzipZoneText(zone_text), zone_bytes: Buffer.byteLength(zone_text) })
    .execute()
  if (keep > 0) {
    const cutoff = await db
      .selectFrom('zone_history')
      .select('id')
      .where('zone', '=', row.zone)
      .orderBy('id', 'desc')
      .offset(keep)
      .limit(1)
      .executeTakeFirst()
    if (cutoff) await db.deleteFrom('zone_history').where('zone', '=', row.zone).where('id', '<=', cutoff.id).execute()
  }
}

const SUMMARY = ['id', 'zone', 'revision', 'role', 'serial', 'zone_bytes', 'saved_at', 'request_id', 'reason'] as const

/** Newest first; `before` (an id) continues a listing where the previous page ended. */
export function listHistory(
  db: Db,
  zone: string,
  page: { limit: number; before?: number | undefined },
): Promise<HistorySummary[]> {
  let q = db.selectFrom('zone_history').select(SUMMARY).where('zone', '=', zone)
  if (page.before !== undefined) q = q.where('id', '<', page.before)
  return q.orderBy('id', 'desc').limit(page.limit).execute()
}

/** The newest saved revision of that name (a zone can return to an earlier revision). */
export async function findHistory(db: Db, zone: string, revision: string): Promise<HistoryEntry | undefined> {
  const row = await db
    .selectFrom('zone_history')
    .selectAll()
    .where('zone', '=', zone)
    .where('revision', '=', revision)
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst()
  if (!row) return undefined
  const { zone_gzip, ...summary } = row
  return { ...summary, zone_text: await gunzipZoneText(zone_gzip) }
}
