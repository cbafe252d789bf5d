/**
 * Per-card callback context: an opaque JSON value a sender attaches to a registered action
 * (`actions[i].context`, at most 4,096 characters of JSON). It is taken out of the card
 * before the card is stored, sealed with the committed action key and kept in
 * `action_contexts`, so no inbox API can return it; only the dispatcher opens it, to send
 * it back to the target with the invocation. A card carrying context needs a committed
 * key (any registered target implies one): without it the delivery is refused with 503
 * before anything is stored.
 */
import type { Kysely } from 'kysely'
import type { DB } from '../db/schema.ts'
import type { Card } from '../ingest/card.ts'
import { seal } from '../settings/action-key.ts'

export const contextAad = (notificationId: number, index: number) => `context:${notificationId}:${index}`

/** Whether an (unvalidated) card body carries any action context: decides whether a key is needed. */
export function carriesContext(body: unknown): boolean {
  const actions = (body as { actions?: unknown } | null)?.actions
  return Array.isArray(actions) && actions.some((a) => a !== null && typeof a === 'object' && 'context' in a)
}

/** Remove every action's context from the card; answers them (JSON text) by action index. */
export function takeContexts(card: Card): Map<number, string> {
  const taken = new Map<number, string>()
  for (const [i, a] of (card.actions ?? []).entries()) {
    if (a.type === 'registered' && a.context !== undefined) {
      taken.set(i, JSON.stringify(a.context))
      delete a.context
    }
  }
  return taken
}

export async function storeContexts(
  db: Kysely<DB>,
  key: Buffer,
  notificationId: number,
  contexts: Map<number, string>,
): Promise<void> {
  if (contexts.size === 0) return
  await db
    .insertInto('action_contexts')
    .values(
      [...contexts].map(([index, json]) => ({
        notification_id: notificationId,
        action_index: index,
        ciphertext: seal(key, json, contextAad(notificationId, index)),
      })),
    )
    .execute()
}
