import type { Kysely, Transaction } from 'kysely'
import type { DB, WebhookKind, WebhookRow } from '../db/schema.ts'

type Db = Kysely<DB> | Transaction<DB>

export interface WebhookMetadata {
  id: string
  channel: string
  channel_locked: boolean
  kind: WebhookKind
  active: boolean
  created_at: string
  revoked_at: string | null
}

/** A hook as GET /api/v1/webhooks and `notify hook list` show it: never its token or hash. */
export function metadata(row: WebhookRow): WebhookMetadata {
  return {
    id: row.id,
    channel: row.channel,
    channel_locked: row.channel_locked === 1,
    kind: row.kind,
    active: row.revoked_at === null,
    created_at: row.created_at,
    revoked_at: row.revoked_at,
  }
}

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

/** Oldest first; `channel`: only that channel's hooks. */
export function listWebhooks(db: Db, channel?: string): Promise<WebhookRow[]> {
  let q = db.selectFrom('webhooks').selectAll()
  if (channel !== undefined) q = q.where('channel', '=', channel)
  return q.orderBy('created_at').orderBy('id').execute()
}

/** Whether this call revoked the hook (false: it was revoked already, or does not exist). */
export async function revokeWebhook(db: Db, id: string, at: string): Promise<boolean> {
  const result = await db
    .updateTable('webhooks')
    .set({ revoked_at: at })
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .executeTakeFirst()
  return result.numUpdatedRows > 0n
}

export async function updateWebhook(db: Db, id: string, patch: Partial<Omit<WebhookRow, 'id'>>): Promise<void> {
  await db.updateTable('webhooks').set(patch).where('id', '=', id).execute()
}
