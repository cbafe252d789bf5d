/** SQL for the zone registry and the history store. First argument: the database or a transaction. */
import type { Kysely, Transaction } from 'kysely'
import type { DB, HistoryRow, NewHistory, ZoneRow } from '../db/schema.ts'

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

/** Save a prior revision; with `keep` > 0, only the newest `keep` revisions of the zone stay. */
export async function saveHistory(db: Db, row: NewHistory, keep = 0): Promise<void> {
  await db.insertInto('zone_history').values(row).execute()
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

/** Newest first. */
export function listHistory(db: Db, zone: string, limit = 100): Promise<HistoryRow[]> {
  return db.selectFrom('zone_history').selectAll().where('zone', '=', zone).orderBy('id', 'desc').limit(limit).execute()
}

export function findHistory(db: Db, zone: string, revision: string): Promise<HistoryRow | undefined> {
  return db
    .selectFrom('zone_history')
    .selectAll()
    .where('zone', '=', zone)
    .where('revision', '=', revision)
    .orderBy('id', 'desc')
    .executeTakeFirst()
}
