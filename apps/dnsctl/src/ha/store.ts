/** SQL of the stored HA role and the HA event log. First argument: the database or a transaction. */
import { randomUUID } from 'node:crypto'
import { deleteBefore } from '@gatehouse/kit/db/batched-delete.ts'
import type { Kysely, Transaction } from 'kysely'
import { newestPublication } from '../audit/store.ts'
import type { DB, HaEventRow, HaStateRow } from '../db/schema.ts'

type Db = Kysely<DB> | Transaction<DB>

export async function readHaState(db: Db): Promise<HaStateRow | undefined> {
  return db.selectFrom('ha_state').selectAll().where('id', '=', 1).executeTakeFirst()
}

export async function writeHaState(db: Db, row: Omit<HaStateRow, 'id'>): Promise<void> {
  await db
    .insertInto('ha_state')
    .values({ id: 1, ...row })
    .onConflict((oc) => oc.column('id').doUpdateSet(row))
    .execute()
}

export async function appendHaEvent(db: Db, event: Omit<HaEventRow, 'id'>): Promise<void> {
  await db
    .insertInto('ha_events')
    .values({ id: randomUUID(), ...event })
    .execute()
}

/** Remove the HA events older than `beforeMs` (the audit retention); returns how many. */
export function removeHaEventsBefore(db: Kysely<DB>, beforeMs: number, batch?: number): Promise<number> {
  return deleteBefore(db, 'ha_events', 'at', new Date(beforeMs).toISOString(), batch)
}

/** Newest first. */
export function listHaEvents(db: Db, limit: number): Promise<HaEventRow[]> {
  return db.selectFrom('ha_events').selectAll().orderBy('at', 'desc').limit(limit).execute()
}

/** When the newest committed zone publication happened (the primary's snapshot time). */
export async function lastPublicationAt(db: Db): Promise<string | null> {
  return (await newestPublication(db))?.at ?? null
}
