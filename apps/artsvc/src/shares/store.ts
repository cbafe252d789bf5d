/** SQL for capability shares. View limits are spent with one conditional UPDATE, so they hold under concurrency. */
import type { Kysely, Transaction } from 'kysely'
import type { DB, ShareRow } from '../db/schema.ts'

type Db = Kysely<DB> | Transaction<DB>

export function getShare(db: Db, id: string): Promise<ShareRow | undefined> {
  return db.selectFrom('shares').selectAll().where('id', '=', id).executeTakeFirst()
}

export function getShareBySecretHash(db: Db, hash: string): Promise<ShareRow | undefined> {
  return db.selectFrom('shares').selectAll().where('secret_hash', '=', hash).executeTakeFirst()
}

export function listShares(db: Db, artifactId: string): Promise<ShareRow[]> {
  return db
    .selectFrom('shares')
    .selectAll()
    .where('artifact_id', '=', artifactId)
    .orderBy('created_at', 'desc')
    .execute()
}

/** Spend one view if the share is active, unexpired and under its limit; false otherwise. */
export async function spendView(db: Db, id: string, now: number): Promise<boolean> {
  const r = await db
    .updateTable('shares')
    .set((eb) => ({ views: eb('views', '+', 1) }))
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
    .where((eb) => eb.or([eb('max_views', 'is', null), eb('views', '<', eb.ref('max_views'))]))
    .executeTakeFirst()
  return Number(r.numUpdatedRows) === 1
}

export async function revokeShare(db: Db, id: string, by: string, now: number): Promise<boolean> {
  const r = await db
    .updateTable('shares')
    .set({ revoked_at: now, revoked_by: by })
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .executeTakeFirst()
  return Number(r.numUpdatedRows) === 1
}

export async function revokeArtifactShares(db: Db, artifactId: string, by: string, now: number): Promise<number> {
  const r = await db
    .updateTable('shares')
    .set({ revoked_at: now, revoked_by: by })
    .where('artifact_id', '=', artifactId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst()
  return Number(r.numUpdatedRows)
}

/** Whether a share still lets its holders view (not revoked, not expired, artifact not deleted). */
/** Until when the share is live (its expiry, or Infinity); undefined when revoked, expired or its artifact deleted. */
export async function shareLiveUntil(db: Db, id: string, now: number): Promise<number | undefined> {
  const row = await db
    .selectFrom('shares')
    .innerJoin('artifacts', 'artifacts.id', 'shares.artifact_id')
    .select(['shares.expires_at'])
    .where('shares.id', '=', id)
    .where('shares.revoked_at', 'is', null)
    .where('artifacts.deleted_at', 'is', null)
    .where((eb) => eb.or([eb('shares.expires_at', 'is', null), eb('shares.expires_at', '>', now)]))
    .executeTakeFirst()
  if (!row) return undefined
  return row.expires_at === null ? Number.POSITIVE_INFINITY : Number(row.expires_at)
}

export async function shareIsLive(db: Db, id: string, now: number): Promise<boolean> {
  return (await shareLiveUntil(db, id, now)) !== undefined
}

/** Unrevoked shares of every artifact with their pinned version number (administrators). */
export function listUnrevokedShares(db: Db) {
  return db
    .selectFrom('shares')
    .leftJoin('versions', 'versions.id', 'shares.version_id')
    .selectAll('shares')
    .select('versions.number as pinned')
    .where('shares.revoked_at', 'is', null)
    .execute()
}
