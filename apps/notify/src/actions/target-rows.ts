/**
 * Action target rows as stored and as answered (never the sealed credential): the reading
 * half of targets.ts, without its dependencies, for the `notify target list` command.
 */
import type { Kysely, Transaction } from 'kysely'
import type { ActionTargetRow, DB } from '../db/schema.ts'

type Db = Kysely<DB> | Transaction<DB>

export const TARGET_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/

export interface TargetResponse {
  name: string
  kind: 'target' | 'slash'
  url: string
  allow_private: boolean
  has_credential: boolean
  trigger: string | null
  description: string
  created_at: string
  updated_at: string
}

export function targetResponse(t: ActionTargetRow): TargetResponse {
  return {
    name: t.name,
    kind: t.kind,
    url: t.url,
    allow_private: t.allow_private === 1,
    has_credential: t.credential !== null,
    trigger: t.slash_trigger,
    description: t.description,
    created_at: t.created_at,
    updated_at: t.updated_at,
  }
}

export function findTarget(db: Db, name: string): Promise<ActionTargetRow | undefined> {
  return db.selectFrom('action_targets').selectAll().where('name', '=', name).executeTakeFirst()
}

export function listTargets(db: Db): Promise<ActionTargetRow[]> {
  return db.selectFrom('action_targets').selectAll().orderBy('name').execute()
}
