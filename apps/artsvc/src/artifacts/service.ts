/**
 * The artifact rules both REST (routes.ts) and MCP (mcp/tools.ts) call: reading what the
 * caller may read, visibility and private grants. Owners decide; readers read; a caller
 * without read access sees 404 (access.ts).
 */
import { recordAudit } from '../audit/store.ts'
import type { Principal } from '../auth/principal.ts'
import { findUserBySubject } from '../auth/users.ts'
import type { AppContext } from '../context.ts'
import type { ArtifactRow, VersionRow } from '../db/schema.ts'
import { errors } from '../errors.ts'
import { iso } from '../ids.ts'
import { readable, requireOwner } from './access.ts'
import {
  deleteGrant,
  getVersion,
  listGrants,
  listVersionFiles,
  listVersions,
  listVisibleArtifacts,
  putGrant,
  setVisibility,
} from './store.ts'

export type Visibility = ArtifactRow['visibility']

export function artifactJson(ctx: AppContext, a: ArtifactRow, extra: Record<string, unknown> = {}) {
  return {
    id: a.id,
    title: a.title,
    visibility: a.visibility,
    latest_version: Number(a.latest_version),
    created_at: iso(Number(a.created_at)),
    updated_at: iso(Number(a.updated_at)),
    url: `${ctx.config.publicOrigin}/a/${a.id}`,
    ...extra,
  }
}

export function versionJson(v: VersionRow) {
  return {
    number: Number(v.number),
    title: v.title,
    entrypoint: v.entrypoint,
    file_count: Number(v.file_count),
    total_bytes: Number(v.total_bytes),
    zip_sha256: v.zip_sha256,
    created_at: iso(Number(v.created_at)),
  }
}

/** Artifacts the caller owns, holds a grant on, or that every signed-in account may read. */
export async function listArtifacts(ctx: AppContext, principal: Principal) {
  const rows = await listVisibleArtifacts(ctx.database.db, principal.user.id)
  return {
    artifacts: rows.map((r) =>
      artifactJson(ctx, r, {
        owner: r.owner_subject,
        role: r.owner_id === principal.user.id ? 'owner' : (r.grant_role ?? 'reader'),
        latest_version_at: r.latest_version_created_at === null ? null : iso(Number(r.latest_version_created_at)),
      }),
    ),
  }
}

export async function getArtifact(ctx: AppContext, principal: Principal, artifactId: string) {
  const { artifact, role } = await readable(ctx, principal, artifactId)
  const versions = await listVersions(ctx.database.db, artifact.id)
  return artifactJson(ctx, artifact, {
    role,
    entrypoint: versions[0]?.entrypoint,
    versions: versions.map(versionJson),
  })
}

/** One version with its file manifest. */
export async function getVersionManifest(ctx: AppContext, principal: Principal, artifactId: string, number: number) {
  const { artifact } = await readable(ctx, principal, artifactId)
  const version = await getVersion(ctx.database.db, artifact.id, number)
  if (!version) throw errors.version_not_found()
  const files = await listVersionFiles(ctx.database.db, version.id)
  return {
    ...versionJson(version),
    files: files.map((f) => ({ path: f.path, size: Number(f.size), sha256: f.sha256, content_type: f.content_type })),
  }
}

export async function changeVisibility(
  ctx: AppContext,
  principal: Principal,
  artifactId: string,
  visibility: Visibility,
) {
  const { artifact } = await requireOwner(ctx, principal, artifactId, 'change the visibility')
  const now = ctx.clock.now()
  await ctx.database.db.transaction().execute(async (tx) => {
    await setVisibility(tx, artifact.id, visibility, now)
    await recordAudit(
      tx,
      principal,
      { action: 'artifact.visibility', targetType: 'artifact', targetId: artifact.id, details: { visibility } },
      now,
    )
  })
  return artifactJson(ctx, { ...artifact, visibility, updated_at: now })
}

export async function grantsOf(ctx: AppContext, principal: Principal, artifactId: string) {
  const { artifact } = await requireOwner(ctx, principal, artifactId, 'see the grants')
  const grants = await listGrants(ctx.database.db, artifact.id)
  return {
    grants: grants.map((g) => ({
      user: g.user_id,
      subject: g.oidc_subject,
      role: g.role,
      created_at: iso(Number(g.created_at)),
    })),
  }
}

export async function grantAccess(
  ctx: AppContext,
  principal: Principal,
  artifactId: string,
  subject: string,
  role: 'viewer' | 'editor',
) {
  const { artifact } = await requireOwner(ctx, principal, artifactId, 'grant access')
  const user = await findUserBySubject(ctx.database.db, subject)
  if (!user) throw errors.user_not_found()
  if (user.id === artifact.owner_id) throw errors.access_denied('grant access to the owner')
  const now = ctx.clock.now()
  await ctx.database.db.transaction().execute(async (tx) => {
    await putGrant(tx, {
      artifact_id: artifact.id,
      user_id: user.id,
      role,
      created_by: principal.user.id,
      created_at: now,
    })
    await recordAudit(
      tx,
      principal,
      { action: 'grant.put', targetType: 'artifact', targetId: artifact.id, details: { user: user.id, role } },
      now,
    )
  })
  return { user: user.id, subject: user.oidc_subject, role }
}

export async function removeGrant(ctx: AppContext, principal: Principal, artifactId: string, userId: string) {
  const { artifact } = await requireOwner(ctx, principal, artifactId, 'remove access')
  const now = ctx.clock.now()
  const removed = await ctx.database.db.transaction().execute(async (tx) => {
    const gone = await deleteGrant(tx, artifact.id, userId)
    if (gone)
      await recordAudit(
        tx,
        principal,
        { action: 'grant.delete', targetType: 'artifact', targetId: artifact.id, details: { user: userId } },
        now,
      )
    return gone
  })
  if (!removed) throw errors.user_not_found()
}
