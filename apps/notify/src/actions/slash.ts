/**
 * Slash-command import and invocation (the spec names slash-command import among the
 * credential operations; the design is ours, README "Slash commands").
 *
 * Import takes Mattermost-style definitions `{trigger, url, token}` and registers each as an
 * action target of kind `slash` named `slash-<trigger>`, its token sealed like a target
 * credential. Like the webhook import it is strict (unknown fields refused), atomic (one
 * transaction: all or nothing), idempotent (an identical definition counts as existing)
 * and fails closed on duplicate triggers, a trigger already bound to another URL or token
 * (remapping), or a name taken by an ordinary target. Answers carry counts only, never a
 * token or URL. A real import commits the bootstrap key like a target save; a dry run
 * commits nothing.
 *
 * A reader invokes a command in a channel where they are operator, channel_admin or
 * administrator; notify POSTs the Mattermost slash-command form (`token`, `command`,
 * `text`, `channel_name`, `user_name`, ...) with `Authorization: Token <token>` and the
 * Idempotency-Key, and keeps the reply's `text` to show the reader (as plain text).
 */
import type { Kysely } from 'kysely'
import { recordAudit } from '../audit/store.ts'
import type { Reader } from '../auth/guard.ts'
import type { ActionTargetRow, DB } from '../db/schema.ts'
import { errors } from '../errors.ts'
import { type ActionKeys, open, seal } from '../settings/action-key.ts'
import { type CallbackLimits, sendCallback } from './dispatch.ts'
import type { Finished } from './invoke.ts'
import { credentialAad, validTargetUrl } from './targets.ts'

export const TRIGGER = /^[a-z0-9][a-z0-9_-]{0,31}$/
export const MAX_IMPORT = 500
const MAX_REPLY_TEXT = 4000

export interface SlashDefinition {
  trigger: string
  url: string
  token: string
  method?: 'P' | 'POST'
  description?: string
  allow_private?: boolean
}

export const slashTargetName = (trigger: string) => `slash-${trigger}`

export async function importSlashCommands(
  db: Kysely<DB>,
  keys: ActionKeys,
  actor: Reader,
  dryRun: boolean,
  commands: SlashDefinition[],
): Promise<{ dry_run: boolean; created: number; existing: number }> {
  const seen = new Set<string>()
  const urls = commands.map((c, i) => {
    if (seen.has(c.trigger)) throw errors.invalid_payload(`commands[${i}].trigger: duplicate trigger`)
    seen.add(c.trigger)
    try {
      return validTargetUrl(c.url, c.allow_private === true)
    } catch (err) {
      throw errors.invalid_payload(`commands[${i}].url: ${(err as Error).message}`)
    }
  })
  const key = dryRun ? await keys.forDryRun() : await keys.forWrite()
  const run = async (tx: Kysely<DB>) => {
    let created = 0
    let existing = 0
    const now = new Date().toISOString()
    for (const [i, c] of commands.entries()) {
      const name = slashTargetName(c.trigger)
      const found = await tx.selectFrom('action_targets').selectAll().where('name', '=', name).executeTakeFirst()
      if (found) {
        if (!key || !sameCommand(found, c, urls[i]!, key)) {
          throw errors.import_rejected(`commands[${i}]: the trigger is already bound to another destination or token`)
        }
        existing++
        continue
      }
      created++
      if (dryRun) continue
      await tx
        .insertInto('action_targets')
        .values({
          name,
          kind: 'slash',
          url: urls[i]!,
          allow_private: c.allow_private ? 1 : 0,
          credential: seal(key!, c.token, credentialAad(name)),
          slash_trigger: c.trigger,
          description: c.description ?? '',
          created_at: now,
          updated_at: now,
        })
        .execute()
    }
    if (!dryRun)
      await recordAudit(tx, actor, 'slash_command.import', `${commands.length} commands`, { created, existing })
    return { dry_run: dryRun, created, existing }
  }
  return dryRun ? run(db) : db.transaction().execute(run)
}

function sameCommand(row: ActionTargetRow, c: SlashDefinition, url: string, key: Buffer): boolean {
  if (row.kind !== 'slash' || row.url !== url || row.allow_private !== (c.allow_private ? 1 : 0)) return false
  try {
    return row.credential !== null && open(key, row.credential, credentialAad(row.name)) === c.token
  } catch {
    return false
  }
}

/** The reply text of a Mattermost-style response (`{text}` JSON or plain text), bounded. */
export function replyText(body: Buffer | undefined): string | null {
  if (!body || body.length === 0) return null
  const raw = body.toString('utf8')
  try {
    const parsed = JSON.parse(raw) as { text?: unknown }
    return typeof parsed.text === 'string' ? parsed.text.slice(0, MAX_REPLY_TEXT) : null
  } catch {
    return raw.slice(0, MAX_REPLY_TEXT)
  }
}

export async function callSlashCommand(
  keys: ActionKeys,
  limits: CallbackLimits & { userAgent: string },
  target: ActionTargetRow,
  reader: Reader,
  channel: string,
  text: string,
  idempotencyKey: string,
): Promise<Finished> {
  const token =
    target.credential === null ? '' : open(await keys.forRead(), target.credential, credentialAad(target.name))
  const form = new URLSearchParams({
    channel_id: channel,
    channel_name: channel,
    command: `/${target.slash_trigger}`,
    text,
    token,
    user_id: reader.id,
    user_name: reader.username,
    trigger_id: idempotencyKey,
  })
  const outcome = await sendCallback(
    {
      url: target.url,
      allowPrivate: target.allow_private === 1,
      idempotencyKey,
      contentType: 'application/x-www-form-urlencoded',
      headers: { 'user-agent': limits.userAgent, authorization: `Token ${token}` },
      body: form.toString(),
    },
    limits,
  )
  return { ...outcome, responseText: outcome.outcome === 'success' ? replyText(outcome.body) : null }
}
