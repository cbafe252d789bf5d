/**
 * Strict, atomic, idempotent webhook import (POST /api/v1/admin/import/webhooks).
 *
 * An imported `id` is the secret of the old system's hook URL, so it becomes the token of
 * `/hooks/{id}` here: only its SHA-256 hash is stored, and neither the response nor any
 * error message repeats it (entries are named by their index). Rules:
 * - duplicate ids in one request, unknown channels: refused (400), nothing written;
 * - an id already imported with the same channel and lock: counted as existing;
 * - an id already present with another channel or lock, or revoked: refused (409), nothing written.
 */
import { hashToken, isUniqueViolation } from '@gatehouse/kit'
import type { Kysely } from 'kysely'
import type { DB, WebhookRow } from '../db/schema.ts'
import { errors } from '../errors.ts'
import { newWebhookId } from './service.ts'
import { findWebhooksByTokenHashes, insertWebhook } from './store.ts'

export interface ImportEntry {
  id: string
  channel: string
  channel_locked?: boolean
}

export interface ImportResult {
  dry_run: boolean
  created: number
  existing: number
}

export async function importWebhooks(db: Kysely<DB>, dryRun: boolean, entries: ImportEntry[]): Promise<ImportResult> {
  const hashes = entries.map((e) => hashToken(e.id))
  const firstIndex = new Map<string, number>()
  hashes.forEach((h, i) => {
    const prev = firstIndex.get(h)
    if (prev !== undefined) throw errors.invalid_payload(`webhooks[${i}]: duplicate id (same as webhooks[${prev}])`)
    firstIndex.set(h, i)
  })
  try {
    return await db.transaction().execute(async (tx) => {
      const channels = new Set(
        (
          await tx
            .selectFrom('channels')
            .select('name')
            .where('name', 'in', [...new Set(entries.map((e) => e.channel)), ''])
            .execute()
        ).map((r) => r.name),
      )
      entries.forEach((e, i) => {
        if (!channels.has(e.channel)) {
          throw errors.invalid_payload(`webhooks[${i}]: unknown channel ${JSON.stringify(e.channel)}`)
        }
      })
      const present = new Map<string, WebhookRow>()
      for (const row of await findWebhooksByTokenHashes(tx, hashes)) present.set(row.token_hash, row)
      let created = 0
      let existing = 0
      const now = new Date().toISOString()
      for (const [i, e] of entries.entries()) {
        const locked = e.channel_locked === true ? 1 : 0
        const row = present.get(hashes[i]!)
        if (row) {
          if (row.revoked_at !== null) throw errors.import_rejected(`webhooks[${i}]: this id was revoked`)
          if (row.channel !== e.channel || row.channel_locked !== locked) {
            throw errors.import_rejected(`webhooks[${i}]: this id is already mapped to another channel or lock setting`)
          }
          existing++
          continue
        }
        created++
        if (!dryRun) {
          await insertWebhook(tx, {
            id: newWebhookId(),
            token_hash: hashes[i]!,
            channel: e.channel,
            channel_locked: locked,
            kind: 'imported',
            created_at: now,
            revoked_at: null,
          })
        }
      }
      return { dry_run: dryRun, created, existing }
    })
  } catch (err) {
    // A concurrent import of the same id: retrying gives the idempotent answer.
    if (isUniqueViolation(err)) throw errors.import_rejected('a concurrent import changed the same webhooks; retry')
    throw err
  }
}
