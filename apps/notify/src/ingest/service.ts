/**
 * Storing a delivery: the hook's override policy picks the channel, then one insert (the
 * SQLite search index is filled afterwards, in batches, by inbox/indexer.ts), by the
 * writer of write-queue.ts (group commit on SQLite).
 */
import type { NewNotification, WebhookRow } from '../db/schema.ts'
import { CHANNEL_NAME } from '../names.ts'
import { type Draft, searchText } from './draft.ts'
import type { DeliveryLookups } from './lookups.ts'

/**
 * Spec rule 1: a payload's channel selects a destination only when the hook is unlocked,
 * and only an existing public channel. Anything else (locked hook, unknown or private
 * channel) keeps the hook's channel, so a sender cannot probe for private channels.
 */
export async function destination(
  lookups: DeliveryLookups,
  hook: WebhookRow,
  requested: string | undefined,
): Promise<string> {
  if (requested === undefined || hook.channel_locked === 1) return hook.channel
  const name = requested.trim().replace(/^[#~]/, '').toLowerCase()
  if (name === hook.channel || !CHANNEL_NAME.test(name)) return hook.channel
  const channel = await lookups.channel(name, hook)
  return channel && channel.visibility === 'public' ? channel.name : hook.channel
}

export async function store(
  lookups: DeliveryLookups,
  hook: WebhookRow,
  draft: Draft,
  write: (row: NewNotification) => Promise<number>,
): Promise<{ id: number; channel: string; created_at: string }> {
  const channel = await destination(lookups, hook, draft.requestedChannel)
  const created_at = new Date().toISOString()
  const row: NewNotification = {
    channel,
    webhook_id: hook.id,
    kind: draft.kind,
    title: draft.title,
    body: draft.body,
    source: draft.source,
    username: draft.username,
    severity: draft.severity,
    state: 'received',
    content: JSON.stringify(draft.content),
    search_text: searchText([channel, ...draft.searchParts]),
    created_at,
  }
  const id = await write(row)
  return { id, channel, created_at }
}
