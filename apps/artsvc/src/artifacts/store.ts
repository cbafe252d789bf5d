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
  return db
    .selectFrom('artifacts')
    .innerJoin('users as owner', 'owner.id', 'artifacts.owner_id')
    .leftJoin('grants', (j) => j.onRef('grants.artifact_id', '=', 'artifacts.id').on('grants.user_id', '=', userId))
    .selectAll('artifacts')
    .select(['owner.oidc_subject as owner_subject', 'grants.role as grant_role'])
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
