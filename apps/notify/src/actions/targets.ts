/**
 * Action targets (spec Part B): a name, the exact callback URL, whether private
 * destinations are allowed, and an optional bearer credential sealed with the committed
 * action key (settings/action-key.ts). Saving one commits the bootstrap key if none is
 * committed yet (503 without key material). DELETE removes the row, so the next
 * invocation on any node finds no target: revocation is cluster-wide at once.
 */
import type { Kysely } from 'kysely'
import { recordAudit } from '../audit/store.ts'
import type { Reader } from '../auth/guard.ts'
import type { ActionTargetRow, DB } from '../db/schema.ts'
import { errors } from '../errors.ts'
import { type ActionKeys, open, seal } from '../settings/action-key.ts'
import { checkTargetUrl, DestinationError } from './destination.ts'
import { findTarget } from './target-rows.ts'

export { findTarget, listTargets, TARGET_NAME, type TargetResponse, targetResponse } from './target-rows.ts'

export interface SaveTargetRequest {
  url: string
  allow_private?: boolean
  /** A new credential; null removes it; absent keeps the stored one. */
  credential?: string | null
  description?: string
}

export const credentialAad = (name: string) => `target:${name}`

export function validTargetUrl(url: string, allowPrivate: boolean): string {
  try {
    return checkTargetUrl(url, allowPrivate).toString()
  } catch (err) {
    if (err instanceof DestinationError) throw errors.invalid_action_target(err.message)
    throw err
  }
}

/** Create or replace a target; `created` tells which. */
export async function saveTarget(
  db: Kysely<DB>,
  keys: ActionKeys,
  actor: Reader,
  name: string,
  req: SaveTargetRequest,
): Promise<{ target: ActionTargetRow; created: boolean }> {
  const allowPrivate = req.allow_private === true
  const url = validTargetUrl(req.url, allowPrivate)
  const key = await keys.forWrite()
  const now = new Date().toISOString()
  return db.transaction().execute(async (tx) => {
    const existing = await findTarget(tx, name)
    if (existing?.kind === 'slash') throw errors.invalid_action_target(`${name} is an imported slash command`)
    const credential =
      req.credential === undefined
        ? (existing?.credential ?? null)
        : req.credential === null
          ? null
          : seal(key, req.credential, credentialAad(name))
    const row: ActionTargetRow = {
      name,
      kind: 'target',
      url,
      allow_private: allowPrivate ? 1 : 0,
      credential,
      slash_trigger: null,
      description: req.description ?? existing?.description ?? '',
      created_at: existing?.created_at ?? now,
      updated_at: now,
    }
    if (existing) {
      const { name: _n, ...patch } = row
      await tx.updateTable('action_targets').set(patch).where('name', '=', name).execute()
    } else {
      await tx.insertInto('action_targets').values(row).execute()
    }
    await recordAudit(tx, actor, existing ? 'action_target.update' : 'action_target.create', name, {
      url,
      allow_private: allowPrivate,
      credential: req.credential === undefined ? 'kept' : req.credential === null ? 'removed' : 'set',
    })
    return { target: row, created: !existing }
  })
}

export async function deleteTarget(db: Kysely<DB>, actor: Reader, name: string): Promise<void> {
  await db.transaction().execute(async (tx) => {
    const r = await tx.deleteFrom('action_targets').where('name', '=', name).executeTakeFirst()
    if (Number(r.numDeletedRows) === 0) throw errors.action_target_not_found(name)
    await recordAudit(tx, actor, 'action_target.delete', name)
  })
}

/** The stored credential in clear, for the dispatcher only. */
export async function targetCredential(keys: ActionKeys, t: ActionTargetRow): Promise<string | undefined> {
  if (t.credential === null) return undefined
  return open(await keys.forRead(), t.credential, credentialAad(t.name))
}
