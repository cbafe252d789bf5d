/**
 * POST   /api/v1/artifacts/{artifact}/shares           owner: create a share link
 * GET    /api/v1/artifacts/{artifact}/shares           owner: list shares with their status
 * DELETE /api/v1/artifacts/{artifact}/shares/{share}   owner: revoke
 * (The share entry /s/{secret} and /shared/* are browser routes in viewer/.)
 */
import type { HttpApp } from '@gatehouse/kit'
import { Type } from 'typebox'
import type { AppContext } from '../context.ts'
import { ID_PATTERN } from '../ids.ts'
import { createShare, listSharesOf, revokeOwnShare } from './service.ts'

const ArtifactParams = Type.Object({ artifact: Type.String({ pattern: ID_PATTERN }) })
const ShareParams = Type.Object({
  artifact: Type.String({ pattern: ID_PATTERN }),
  share: Type.String({ pattern: ID_PATTERN }),
})
const CreateShare = Type.Object(
  {
    version: Type.Optional(Type.Integer({ minimum: 1 })),
    follow_latest: Type.Optional(Type.Boolean()),
    expires_at: Type.Optional(Type.String({ format: 'date-time' })),
    max_views: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000_000 })),
    label: Type.Optional(Type.String({ maxLength: 200 })),
  },
  { additionalProperties: false },
)

export function shareRoutes(app: HttpApp, ctx: AppContext) {
  app.post(
    '/api/v1/artifacts/:artifact/shares',
    { schema: { summary: 'Create a share link (owner)', params: ArtifactParams, body: CreateShare, tags: ['shares'] } },
    async (req, reply) => {
      const principal = await ctx.auth.require(req)
      return reply.code(201).send(await createShare(ctx, principal, req.params.artifact, req.body))
    },
  )

  app.get(
    '/api/v1/artifacts/:artifact/shares',
    {
      schema: {
        summary: "List an artifact's share links with their status (owner)",
        params: ArtifactParams,
        tags: ['shares'],
      },
    },
    async (req) => listSharesOf(ctx, await ctx.auth.require(req), req.params.artifact),
  )

  app.delete(
    '/api/v1/artifacts/:artifact/shares/:share',
    { schema: { summary: 'Revoke a share link (owner)', params: ShareParams, tags: ['shares'] } },
    async (req, reply) => {
      const principal = await ctx.auth.require(req)
      await revokeOwnShare(ctx, principal, req.params.artifact, req.params.share)
      return reply.code(204).send()
    },
  )
}
