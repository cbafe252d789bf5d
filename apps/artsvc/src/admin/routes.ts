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
import { listAudit } from '../audit/store.ts'
import type { AppContext } from '../context.ts'
import { ID_PATTERN } from '../ids.ts'
import { adminDeleteArtifact, adminListArtifacts, adminRevokeShare } from './service.ts'

const ArtifactParams = Type.Object({ artifact: Type.String({ pattern: ID_PATTERN }) })
const ShareParams = Type.Object({ share: Type.String({ pattern: ID_PATTERN }) })
const AuditQuery = Type.Object(
  { limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })) },
  { additionalProperties: false },
)

export function adminRoutes(app: HttpApp, ctx: AppContext) {
  app.get(
    '/api/v1/admin/artifacts',
    { schema: { summary: 'List every active artifact with its owner and active shares (admin)', tags: ['admin'] } },
    async (req) => adminListArtifacts(ctx, await ctx.auth.requireAdmin(req)),
  )

  app.delete(
    '/api/v1/admin/artifacts/:artifact',
    {
      schema: {
        summary: 'Delete an artifact (admin; soft delete, shares revoked)',
        params: ArtifactParams,
        tags: ['admin'],
      },
    },
    async (req, reply) => {
      await adminDeleteArtifact(ctx, await ctx.auth.requireAdmin(req), req.params.artifact)
      return reply.code(204).send()
    },
  )

  app.delete(
    '/api/v1/admin/shares/:share',
    { schema: { summary: 'Revoke any share link (admin)', params: ShareParams, tags: ['admin'] } },
    async (req, reply) => {
      await adminRevokeShare(ctx, await ctx.auth.requireAdmin(req), req.params.share)
      return reply.code(204).send()
    },
  )

  app.get(
    '/api/v1/admin/audit',
    { schema: { summary: 'List the newest audit records (admin)', querystring: AuditQuery, tags: ['admin'] } },
    async (req) => {
      await ctx.auth.requireAdmin(req)
      return { events: await listAudit(ctx.database.db, req.query.limit ?? 100) }
    },
  )
}
