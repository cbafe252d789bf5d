import type { Kysely, Transaction } from 'kysely'
import type { DB, WebhookRow } from '../db/schema.ts'

type Db = Kysely<DB> | Transaction<DB>

export async function insertWebhook(db: Db, row: WebhookRow): Promise<void> {
  await db.insertInto('webhooks').values(row).execute()
}

export function findWebhook(db: Db, id: string): Promise<WebhookRow | undefined> {
  return db.selectFrom('webhooks').selectAll().where('id', '=', id).executeTakeFirst()
}

export function findWebhooksByTokenHashes(db: Db, hashes: string[]): Promise<WebhookRow[]> {
  if (hashes.length === 0) return Promise.resolve([])
  return db.selectFrom('webhooks').selectAll().where('token_hash', 'in', hashes).execute()
}

export function listWebhooks(db: Db): Promise<WebhookRow[]> {
  return db.selectFrom('webhooks').selectAll().orderBy('created_at').orderBy('id').execute()
}

export async function revokeWebhook(db: Db, id: string, at: string): Promise<void> {
  await db
    .updateTable('webhooks')
    .set({ revoked_at: at })
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .execute()
}

export async function updateWebhook(db: Db, id: string, patch: Partial<Omit<WebhookRow, 'id'>>): Promise<void> {
  await db.updateTable('webhooks').set(patch).where('id', '=', id).execute()
}
