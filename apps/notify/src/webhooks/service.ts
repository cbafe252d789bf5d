/**
 * Incoming webhooks and channel publishing tokens. A token is 32 random bytes shown
 * exactly once; only its SHA-256 hash is stored. Revocation takes effect on the next
 * request: every delivery looks its token up in the database (no cache, see
 * ingest/lookups.ts), so all nodes sharing a database agree at once. Creating and revoking
 * are shared by the API and `notify hook create|revoke`, audit entry included.
 */
// Not the kit's index: `notify hook create` would load the HTTP stack with it.
import { generateToken, hashToken } from '@gatehouse/kit/secrets.ts'
import type { Kysely, Transaction } from 'kysely'
import { recordAudit } from '../audit/store.ts'
import type { Reader } from '../auth/guard.ts'
import { findChannel, insertChannel } from '../channels/store.ts'
import type { DB, WebhookKind, WebhookRow } from '../db/schema.ts'
import { errors } from '../errors.ts'
import { findWebhook, insertWebhook, metadata, revokeWebhook, updateWebhook, type WebhookMetadata } from './store.ts'

export const DEVELOPMENT_HOOK_ID = 'development'

export interface IssuedWebhook extends WebhookMetadata {
  /** Shown once: the secret publishing path `/hooks/{token}`. */
  path: string
  /** Shown once: the same token for `Authorization: Bearer`. */
  token: string
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

type Actor = Pick<Reader, 'id' | 'username'>

/** A new hook on an existing channel (channel_not_found otherwise), audited as `webhook.create`. */
export function createWebhook(
  db: Kysely<DB>,
  actor: Actor,
  channel: string,
  channelLocked: boolean,
): Promise<IssuedWebhook> {
  return db.transaction().execute(async (tx) => {
    if (!(await findChannel(tx, channel))) throw errors.channel_not_found(channel)
    const hook = await issueWebhook(tx, channel, channelLocked, 'webhook')
    await recordAudit(tx, actor, 'webhook.create', hook.id, { channel, channel_locked: channelLocked })
    return hook
  })
}

/**
 * "New URL": another active hook with the same channel and override policy, audited as
 * `webhook.new_url` in the same transaction (a URL handed out is always on record).
 */
export function newUrl(db: Kysely<DB>, actor: Actor, id: string): Promise<IssuedWebhook> {
  return db.transaction().execute(async (tx) => {
    const hook = await findWebhook(tx, id)
    if (!hook) throw errors.webhook_not_found(id)
    if (hook.revoked_at !== null) throw errors.webhook_revoked(id)
    const kind = hook.kind === 'channel' ? 'channel' : 'webhook'
    const issued = await issueWebhook(tx, hook.channel, hook.channel_locked === 1, kind)
    await recordAudit(tx, actor, 'webhook.new_url', id, { new_webhook: issued.id })
    return issued
  })
}

/**
 * Revoke a hook: deliveries with its token are refused from the next one on; what it
 * delivered stays. Revoking a revoked hook changes nothing (it keeps its first revocation
 * time) and is not an error; only the revocation that changed the hook is audited as
 * `webhook.revoke`, so the log says who cut a hook off, not who asked again.
 */
export function revoke(db: Kysely<DB>, actor: Actor, id: string): Promise<{ hook: WebhookRow; changed: boolean }> {
  return db.transaction().execute(async (tx) => {
    const before = await findWebhook(tx, id)
    if (!before) throw errors.webhook_not_found(id)
    // The UPDATE's own count decides: two revokes at once both read the hook active.
    const changed = before.revoked_at === null && (await revokeWebhook(tx, id, new Date().toISOString()))
    if (changed) await recordAudit(tx, actor, 'webhook.revoke', id)
    return { hook: (await findWebhook(tx, id))!, changed }
  })
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
