/**
 * Cluster settings: values every notify process on one database shares, generated once
 * (the VAPID key pair for Web Push; the action encryption key of spec Part B, Authentication
 * 8, belongs here too). A setting is written once and never rewritten: when two processes
 * start together, both try to insert, the first commit wins and both read that row.
 */
import type { Kysely, Transaction } from 'kysely'
import type { DB } from '../db/schema.ts'

type Db = Kysely<DB> | Transaction<DB>

/** The Web Push VAPID key pair, JSON `{publicKey, privateKey}` (push/service.ts). */
export const VAPID_SETTING = 'vapid_keys'

export async function readSetting(db: Db, key: string): Promise<string | undefined> {
  const row = await db.selectFrom('settings').select('value').where('name', '=', key).executeTakeFirst()
  return row?.value
}

/** The stored value of `key`, creating it with `make()` when missing (race-free across processes). */
export async function ensureSetting(db: Db, key: string, make: () => string): Promise<string> {
  const existing = await readSetting(db, key)
  if (existing !== undefined) return existing
  await db
    .insertInto('settings')
    .values({ name: key, value: make(), created_at: new Date().toISOString() })
    .onConflict((oc) => oc.column('name').doNothing())
    .execute()
  const value = await readSetting(db, key)
  if (value === undefined) throw new TypeError(`cluster setting ${key} vanished after insert`)
  return value
}
