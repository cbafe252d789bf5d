/**
 * Administrator endpoints (ARTSVC_ADMIN_SUBJECTS / ARTSVC_ADMIN_GROUPS). Administrators
 * list, revoke and soft-delete; they never gain owner or editor rights.
 *   GET    /api/v1/admin/artifacts             every active artifact with owner and active shares
 *   DELETE /api/v1/admin/artifacts/{artifact}  soft-delete: hidden at once, shares revoked, files kept
 *   DELETE /api/v1/admin/shares/{share}        revoke any share
 *   GET    /api/v1/admin/audit                 newest audit records
 */
import type { HttpApp } from '@gatehouse/kit'
import { Type } from 'typebox'
import { artifactJson } from '../artifacts/routes.ts'
import { listAudit, recordAudit } from '../audit/store.ts'
import { announceRevocation } from '../content/liveness-notify.ts'
import type { AppContext } from '../context.ts'
import { errors } from '../errors.ts'
import { ID_PATTERN } from '../ids.ts'
import { shareJson, shareStatus } from '../shares/service.ts'
import { revokeArtifactShares, revokeShare } from '../shares/store.ts'

const ArtifactParams = Type.Object({ artifact: Type.String({ pattern: ID_PATTERN }) })
const ShareParams = Type.Object({ share: Type.String({ pattern: ID_PATTERN }) })
const AuditQuery = Type.Object(
  { limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })) },
  { additionalProperties: false },
)

export function adminRoutes(app: HttpApp, ctx: AppContext) {
  app.get('/api/v1/admin/artifacts', { schema: { tags: ['admin'] } }, async (req) => {
    await ctx.auth.requireAdmin(req)
    const now = ctx.now()
    const [artifacts, shares] = await Promise.all([
      ctx.db
        .selectFrom('artifacts')
        .innerJoin('users', 'users.id', 'artifacts.owner_id')
        .selectAll('artifacts')
        .select('users.oidc_subject as owner_subject')
        .where('artifacts.deleted_at', 'is', null)
        .orderBy('artifacts.updated_at', 'desc')
        .execute(),
      ctx.db
        .selectFrom('shares')
        .leftJoin('versions', 'versions.id', 'shares.version_id')
        .selectAll('shares')
        .select('versions.number as pinned')
        .where('shares.revoked_at', 'is', null)
        .execute(),
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
  })

  app.delete(
    '/api/v1/admin/artifacts/:artifact',
    { schema: { params: ArtifactParams, tags: ['admin'] } },
    async (req, reply) => {
      const admin = await ctx.auth.requireAdmin(req)
      const now = ctx.now()
      await ctx.db.transaction().execute(async (tx) => {
        const r = await tx
          .updateTable('artifacts')
          .set({ deleted_at: now, deleted_by: admin.user.id })
          .where('id', '=', req.params.artifact)
          .where('deleted_at', 'is', null)
          .executeTakeFirst()
        if (Number(r.numUpdatedRows) !== 1) throw errors.artifact_not_found()
        const revoked = await revokeArtifactShares(tx, req.params.artifact, admin.user.id, now)
        await announceRevocation(ctx, tx)
        await recordAudit(
          tx,
          admin,
          {
            action: 'admin.artifact.delete',
            targetType: 'artifact',
            targetId: req.params.artifact,
            details: { shares_revoked: revoked },
          },
          now,
        )
      })
      ctx.caches.invalidateLiveness()
      return reply.code(204).send()
    },
  )

  app.delete(
    '/api/v1/admin/shares/:share',
    { schema: { params: ShareParams, tags: ['admin'] } },
    async (req, reply) => {
      const admin = await ctx.auth.requireAdmin(req)
      const now = ctx.now()
      await ctx.db.transaction().execute(async (tx) => {
        const share = await tx
          .selectFrom('shares')
          .select(['id', 'artifact_id', 'revoked_at'])
          .where('id', '=', req.params.share)
          .executeTakeFirst()
        if (!share) throw errors.share_not_found()
        if (await revokeShare(tx, share.id, admin.user.id, now)) {
          await announceRevocation(ctx, tx)
          await recordAudit(
            tx,
            admin,
            {
              action: 'admin.share.revoke',
              targetType: 'share',
              targetId: share.id,
              details: { artifact: share.artifact_id },
            },
            now,
          )
        }
      })
      ctx.caches.invalidateLiveness()
      return reply.code(204).send()
    },
  )

  app.get('/api/v1/admin/audit', { schema: { querystring: AuditQuery, tags: ['admin'] } }, async (req) => {
    await ctx.auth.requireAdmin(req)
    return { events: await listAudit(ctx.db, req.query.limit ?? 100) }
  })
}
