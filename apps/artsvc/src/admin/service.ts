/**
 * Administrator powers (REST admin/routes.ts and the artsvc_admin_* MCP tools): list every
 * active artifact with its active shares, soft-delete an artifact, revoke any share. They
 * never grant owner or editor rights. Callers check `isAdmin` (requireAdmin) first.
 */
import { artifactJson } from '../artifacts/service.ts'
import { listActiveArtifacts, softDeleteArtifact } from '../artifacts/store.ts'
import { recordAudit } from '../audit/store.ts'
import type { Principal } from '../auth/principal.ts'
import { announceRevocation } from '../content/liveness-notify.ts'
import type { AppContext } from '../context.ts'
import { errors } from '../errors.ts'
import { shareJson, shareStatus } from '../shares/service.ts'
import { getShare, listUnrevokedShares, revokeArtifactShares, revokeShare } from '../shares/store.ts'

export function assertAdmin(principal: Principal): void {
  if (!principal.isAdmin) throw errors.admin_required()
}

export async function adminListArtifacts(ctx: AppContext, admin: Principal) {
  assertAdmin(admin)
  const now = ctx.clock.now()
  const [artifacts, shares] = await Promise.all([
    listActiveArtifacts(ctx.database.db),
    listUnrevokedShares(ctx.database.db),
  ])
  const byArtifact = new Map<string, ReturnType<typeof shareJson>[]>()
  for (const s of shares) {
    if (shareStatus(s, now) !== 'active') continue
    const list = byArtifact.get(s.artifact_id) ?? []
    list.push(shareJson(s, now, s.pinned === null ? null : Number(s.pinned)))
    byArtifact.set(s.artifact_id, list)
  }
  return {
    artifacts: artifacts.map((a) =>
      artifactJson(ctx, a, { owner: a.owner_subject, shares: byArtifact.get(a.id) ?? [] }),
    ),
  }
}

/** Soft-delete: hidden at once, every share revoked, stored files kept. */
export async function adminDeleteArtifact(ctx: AppContext, admin: Principal, artifactId: string) {
  assertAdmin(admin)
  const now = ctx.clock.now()
  let revoked = 0
  await ctx.database.db.transaction().execute(async (tx) => {
    if (!(await softDeleteArtifact(tx, artifactId, admin.user.id, now))) throw errors.artifact_not_found()
    revoked = await revokeArtifactShares(tx, artifactId, admin.user.id, now)
    await announceRevocation(ctx, tx)
    await recordAudit(
      tx,
      admin,
      {
        action: 'admin.artifact.delete',
        targetType: 'artifact',
        targetId: artifactId,
        details: { shares_revoked: revoked },
      },
      now,
    )
  })
  ctx.caches.invalidateLiveness()
  return { artifact: artifactId, deleted: true as const, shares_revoked: revoked }
}

/** Revoke any share; revoking a revoked share changes nothing (and is not audited again). */
export async function adminRevokeShare(ctx: AppContext, admin: Principal, shareId: string) {
  assertAdmin(admin)
  const now = ctx.clock.now()
  let artifact = ''
  await ctx.database.db.transaction().execute(async (tx) => {
    const share = await getShare(tx, shareId)
    if (!share) throw errors.share_not_found()
    artifact = share.artifact_id
    if (await revokeShare(tx, share.id, admin.user.id, now)) {
      await announceRevocation(ctx, tx)
      await recordAudit(
        tx,
        admin,
        { action: 'admin.share.revoke', targetType: 'share', targetId: share.id, details: { artifact } },
        now,
      )
    }
  })
  ctx.caches.invalidateLiveness()
  return { share: shareId, artifact, revoked: true as const }
}
