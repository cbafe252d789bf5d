/**
 * Incoming webhooks and channel publishing tokens. A token is 32 random bytes shown
 * exactly once; only its SHA-256 hash is stored. Revocation takes effect on the next
 * request: every delivery looks its token up in the database (no cache, see
 * ingest/lookups.ts), so all nodes sharing a database agree at once.
 */
import { generateToken, hashToken } from '@gatehouse/kit'
import type { Kysely, Transaction } from 'kysely'
import { findChannel, insertChannel } from '../channels/store.ts'
import type { DB, WebhookKind, WebhookRow } from '../db/schema.ts'
import { errors } from '../errors.ts'
import { findWebhook, insertWebhook, revokeWebhook, updateWebhook } from './store.ts'

export const DEVELOPMENT_HOOK_ID = 'development'

export interface WebhookMetadata {
  id: string
  channel: string
  channel_locked: boolean
  kind: WebhookKind
  active: boolean
  created_at: string
  revoked_at: string | null
}

export interface IssuedWebhook extends WebhookMetadata {
  /** Shown once: the secret publishing path `/hooks/{token}`. */
  path: string
  /** Shown once: the same token for `Authorization: Bearer`. */
  token: string
}

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

export function newWebhookId(): string {
  return `wh_${generateToken(16).slice(0, 20)}`
}

/** Create a hook with a fresh token for an existing channel. */
export async function issueWebhook(
  db: Kysely<DB> | Transaction<DB>,
  channel: string,
  channelLocked: boolean,
  kind: WebhookKind,
): Promise<IssuedWebhook> {
  const token = generateToken()
  const row: WebhookRow = {
    id: newWebhookId(),
    token_hash: hashToken(token),
    channel,
    channel_locked: channelLocked ? 1 : 0,
    kind,
    created_at: new Date().toISOString(),
    revoked_at: null,
  }
  await insertWebhook(db, row)
  return { ...metadata(row), path: `/hooks/${token}`, token }
}

export async function createWebhook(db: Kysely<DB>, channel: string, channelLocked: boolean): Promise<IssuedWebhook> {
  if (!(await findChannel(db, channel))) throw errors.channel_not_found(channel)
  return issueWebhook(db, channel, channelLocked, 'webhook')
}

/** "New URL": another active hook with the same channel and override policy. */
export async function newUrl(db: Kysely<DB>, id: string): Promise<IssuedWebhook> {
  const hook = await findWebhook(db, id)
  if (!hook) throw errors.webhook_not_found(id)
  if (hook.revoked_at !== null) throw errors.webhook_revoked(id)
  return issueWebhook(db, hook.channel, hook.channel_locked === 1, hook.kind === 'channel' ? 'channel' : 'webhook')
}

export async function revoke(db: Kysely<DB>, id: string): Promise<WebhookRow> {
  const hook = await findWebhook(db, id)
  if (!hook) throw errors.webhook_not_found(id)
  await revokeWebhook(db, id, new Date().toISOString())
  return (await findWebhook(db, id))!
}

/**
 * The active hook for a presented token, or hook_token_invalid. `byTokenHash` reads the
 * hook from the database (ingest/lookups.ts), on every delivery.
 */
export async function authenticateToken(
  byTokenHash: (tokenHash: string) => Promise<WebhookRow | undefined> | WebhookRow | undefined,
  token: string | undefined,
): Promise<WebhookRow> {
  if (!token || token.length > 512) throw errors.hook_token_invalid()
  const hook = await byTokenHash(hashToken(token))
  if (!hook || hook.revoked_at !== null) throw errors.hook_token_invalid()
  return hook
}

/**
 * The development credential (`-hook-id` / NOTIFY_HOOK_TOKEN): an unlocked hook on the
 * development channel (created public when missing). Restarting with another token
 * replaces the previous one.
 */
export async function ensureDevelopmentHook(db: Kysely<DB>, token: string, channel: string): Promise<void> {
  const now = new Date().toISOString()
  if (!(await findChannel(db, channel))) {
    await insertChannel(db, {
      name: channel,
      display_name: channel,
      description: 'Development channel',
      accent_color: '#4f6bed',
      visibility: 'public',
      created_at: now,
    }).catch(async (err) => {
      if (!(await findChannel(db, channel))) throw err
    })
  }
  const tokenHash = hashToken(token)
  const existing = await findWebhook(db, DEVELOPMENT_HOOK_ID)
  if (existing) {
    // Written only when it changed: a start on a read-only database (a standby) must not write.
    if (existing.token_hash !== tokenHash || existing.channel !== channel || existing.revoked_at !== null)
      await updateWebhook(db, DEVELOPMENT_HOOK_ID, { token_hash: tokenHash, channel, revoked_at: null })
    return
  }
  await insertWebhook(db, {
    id: DEVELOPMENT_HOOK_ID,
    token_hash: tokenHash,
    channel,
    channel_locked: 0,
    kind: 'development',
    created_at: now,
    revoked_at: null,
  }).catch(async (err) => {
    if (!(await findWebhook(db, DEVELOPMENT_HOOK_ID))) throw err
  })
}
