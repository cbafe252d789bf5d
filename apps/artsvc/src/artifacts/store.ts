/** SQL for artifacts, versions, their file manifests and private grants. */
import type { Kysely, Transaction } from 'kysely'
import type { ArtifactRow, DB, GrantRow, VersionFileRow, VersionRow } from '../db/schema.ts'

type Db = Kysely<DB> | Transaction<DB>

export function getActiveArtifact(db: Db, id: string): Promise<ArtifactRow | undefined> {
  return db.selectFrom('artifacts').selectAll().where('id', '=', id).where('deleted_at', 'is', null).executeTakeFirst()
}

export function getGrant(db: Db, artifactId: string, userId: string): Promise<GrantRow | undefined> {
  return db
    .selectFrom('grants')
    .selectAll()
    .where('artifact_id', '=', artifactId)
    .where('user_id', '=', userId)
    .executeTakeFirst()
}

/** Artifacts a user owns, holds a grant on, or that are visible to every signed-in account. */
export function listVisibleArtifacts(db: Db, userId: string) {
  return (
    db
      .selectFrom('artifacts')
      .innerJoin('users as owner', 'owner.id', 'artifacts.owner_id')
      .leftJoin('grants', (j) => j.onRef('grants.artifact_id', '=', 'artifacts.id').on('grants.user_id', '=', userId))
      // The newest version's time: the library sorts by it (updated_at also moves with visibility).
      .leftJoin('versions as latest', (j) =>
        j.onRef('latest.artifact_id', '=', 'artifacts.id').onRef('latest.number', '=', 'artifacts.latest_version'),
      )
      .selectAll('artifacts')
      .select([
        'owner.oidc_subject as owner_subject',
        'grants.role as grant_role',
        'latest.created_at as latest_version_created_at',
      ])
      .where('artifacts.deleted_at', 'is', null)
      .where((eb) =>
        eb.or([
          eb('artifacts.owner_id', '=', userId),
          eb('grants.user_id', '=', userId),
          eb('artifacts.visibility', '=', 'authenticated'),
        ]),
      )
      .orderBy('artifacts.updated_at', 'desc')
      .execute()
  )
}

export function listVersions(db: Db, artifactId: string): Promise<VersionRow[]> {
  return db.selectFrom('versions').selectAll().where('artifact_id', '=', artifactId).orderBy('number', 'desc').execute()
}

export function getVersion(db: Db, artifactId: string, number: number): Promise<VersionRow | undefined> {
  return db
    .selectFrom('versions')
    .selectAll()
    .where('artifact_id', '=', artifactId)
    .where('number', '=', number)
    .executeTakeFirst()
}

export function getVersionById(db: Db, id: string): Promise<VersionRow | undefined> {
  return db.selectFrom('versions').selectAll().where('id', '=', id).executeTakeFirst()
}

export function listVersionFiles(db: Db, versionId: string): Promise<VersionFileRow[]> {
  return db.selectFrom('version_files').selectAll().where('version_id', '=', versionId).orderBy('path').execute()
}

export async function insertVersionFiles(db: Db, rows: VersionFileRow[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 200) {
    await db
      .insertInto('version_files')
      .values(rows.slice(i, i + 200))
      .execute()
  }
}

export function listGrants(db: Db, artifactId: string) {
  return db
    .selectFrom('grants')
    .innerJoin('users', 'users.id', 'grants.user_id')
    .select(['grants.user_id', 'grants.role', 'grants.created_at', 'users.oidc_subject'])
    .where('grants.artifact_id', '=', artifactId)
    .orderBy('grants.created_at')
    .execute()
}

export async function putGrant(db: Db, row: GrantRow): Promise<void> {
  await db
    .insertInto('grants')
    .values(row)
    .onConflict((oc) => oc.columns(['artifact_id', 'user_id']).doUpdateSet({ role: row.role }))
    .execute()
}

export async function deleteGrant(db: Db, artifactId: string, userId: string): Promise<boolean> {
  const r = await db
    .deleteFrom('grants')
    .where('artifact_id', '=', artifactId)
    .where('user_id', '=', userId)
    .executeTakeFirst()
  return Number(r.numDeletedRows) > 0
}

/** A new artifact with its first version's number (the commit transaction inserts the version next). */
export async function insertArtifact(db: Db, row: ArtifactRow): Promise<void> {
  await db.insertInto('artifacts').values(row).execute()
}

/** Take the next version number of an active artifact (and its new title); undefined when it is gone. */
export async function bumpLatestVersion(
  db: Db,
  artifactId: string,
  title: string,
  now: number,
): Promise<number | undefined> {
  const bumped = await db
    .updateTable('artifacts')
    .set((eb) => ({ latest_version: eb('latest_version', '+', 1), updated_at: now, title }))
    .where('id', '=', artifactId)
    .where('deleted_at', 'is', null)
    .returning('latest_version')
    .executeTakeFirst()
  return bumped === undefined ? undefined : Number(bumped.latest_version)
}

export async function insertVersion(db: Db, row: VersionRow): Promise<void> {
  await db.insertInto('versions').values(row).execute()
}

export async function setVisibility(
  db: Db,
  artifactId: string,
  visibility: ArtifactRow['visibility'],
  now: number,
): Promise<void> {
  await db.updateTable('artifacts').set({ visibility, updated_at: now }).where('id', '=', artifactId).execute()
}

/** Soft-delete: false when the artifact is unknown or already deleted. */
export async function softDeleteArtifact(db: Db, artifactId: string, by: string, now: number): Promise<boolean> {
  const r = await db
    .updateTable('artifacts')
    .set({ deleted_at: now, deleted_by: by })
    .where('id', '=', artifactId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst()
  return Number(r.numUpdatedRows) === 1
}

/** Every active artifact with its owner's subject, newest first (administrators). */
export function listActiveArtifacts(db: Db) {
  return db
    .selectFrom('artifacts')
    .innerJoin('users', 'users.id', 'artifacts.owner_id')
    .selectAll('artifacts')
    .select('users.oidc_subject as owner_subject')
    .where('artifacts.deleted_at', 'is', null)
    .orderBy('artifacts.updated_at', 'desc')
    .execute()
}

export function versionNumbers(db: Db, artifactId: string) {
  return db.selectFrom('versions').select(['id', 'number']).where('artifact_id', '=', artifactId).execute()
}
