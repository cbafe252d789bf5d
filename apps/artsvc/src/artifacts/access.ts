/**
 * Who may do what with an artifact. Owners do everything; editors publish new versions;
 * viewers (private grants) and, for `authenticated` artifacts, every signed-in account
 * may read. Administrators get nothing here: their powers live in admin/.
 * A caller who may not read an artifact gets 404, so existence does not leak.
 */
import type { Principal } from '../auth/principal.ts'
import type { AppContext } from '../context.ts'
import type { ArtifactRow } from '../db/schema.ts'
import { errors } from '../errors.ts'
import { getActiveArtifact, getGrant } from './store.ts'

export type Role = 'owner' | 'editor' | 'viewer' | 'reader'

export async function roleOf(ctx: AppContext, artifact: ArtifactRow, principal: Principal): Promise<Role | undefined> {
  if (artifact.owner_id === principal.user.id) return 'owner'
  const grant = await getGrant(ctx.database.db, artifact.id, principal.user.id)
  if (grant) return grant.role
  return artifact.visibility === 'authenticated' ? 'reader' : undefined
}

/** The artifact and the caller's role; 404 without read access. */
export async function readable(
  ctx: AppContext,
  principal: Principal,
  artifactId: string,
): Promise<{ artifact: ArtifactRow; role: Role }> {
  const artifact = await getActiveArtifact(ctx.database.db, artifactId)
  const role = artifact && (await roleOf(ctx, artifact, principal))
  if (!artifact || !role) throw errors.artifact_not_found()
  return { artifact, role }
}

export async function requireOwner(ctx: AppContext, principal: Principal, artifactId: string, what: string) {
  const r = await readable(ctx, principal, artifactId)
  if (r.role !== 'owner') throw errors.access_denied(what)
  return r
}

export async function requirePublisher(ctx: AppContext, principal: Principal, artifactId: string) {
  const r = await readable(ctx, principal, artifactId)
  if (r.role !== 'owner' && r.role !== 'editor') throw errors.access_denied('publish versions of this artifact')
  return r
}
