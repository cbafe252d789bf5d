/**
 * GET    /api/v1/artifacts                              artifacts the caller can read
 * GET    /api/v1/artifacts/{artifact}                   one artifact with its versions
 * GET    /api/v1/artifacts/{artifact}/versions/{n}      one version with its file manifest
 * PUT    /api/v1/artifacts/{artifact}/visibility        owner: private | authenticated
 * GET    /api/v1/artifacts/{artifact}/grants            owner: private viewer/editor grants
 * PUT    /api/v1/artifacts/{artifact}/grants            owner: grant {subject, role}
 * DELETE /api/v1/artifacts/{artifact}/grants/{user}     owner: remove a grant
 */
import type { HttpApp } from '@gatehouse/kit'
import { Type } from 'typebox'
import type { AppContext } from '../context.ts'
import { ID_PATTERN } from '../ids.ts'
import {
  changeVisibility,
  getArtifact,
  getVersionManifest,
  grantAccess,
  grantsOf,
  listArtifacts,
  removeGrant,
} from './service.ts'

export { artifactJson, versionJson } from './service.ts'

const ArtifactParams = Type.Object({ artifact: Type.String({ pattern: ID_PATTERN }) })
const VersionParams = Type.Object({
  artifact: Type.String({ pattern: ID_PATTERN }),
  number: Type.Integer({ minimum: 1 }),
})
const GrantParams = Type.Object({
  artifact: Type.String({ pattern: ID_PATTERN }),
  user: Type.String({ pattern: ID_PATTERN }),
})
const Visibility = Type.Object(
  { visibility: Type.Union([Type.Literal('private'), Type.Literal('authenticated')]) },
  { additionalProperties: false },
)
const GrantBody = Type.Object(
  {
    subject: Type.String({ minLength: 1, maxLength: 512 }),
    role: Type.Union([Type.Literal('viewer'), Type.Literal('editor')]),
  },
  { additionalProperties: false },
)

export function artifactRoutes(app: HttpApp, ctx: AppContext) {
  app.get(
    '/api/v1/artifacts',
    { schema: { summary: 'List the artifacts the caller can read', tags: ['artifacts'] } },
    async (req) => listArtifacts(ctx, await ctx.auth.require(req)),
  )

  app.get(
    '/api/v1/artifacts/:artifact',
    { schema: { summary: 'Get an artifact with its versions', params: ArtifactParams, tags: ['artifacts'] } },
    async (req) => getArtifact(ctx, await ctx.auth.require(req), req.params.artifact),
  )

  app.get(
    '/api/v1/artifacts/:artifact/versions/:number',
    { schema: { summary: 'Get a version with its file manifest', params: VersionParams, tags: ['artifacts'] } },
    async (req) => getVersionManifest(ctx, await ctx.auth.require(req), req.params.artifact, req.params.number),
  )

  app.put(
    '/api/v1/artifacts/:artifact/visibility',
    {
      schema: {
        summary: "Set an artifact's visibility (owner)",
        params: ArtifactParams,
        body: Visibility,
        tags: ['artifacts'],
      },
    },
    async (req) => changeVisibility(ctx, await ctx.auth.require(req), req.params.artifact, req.body.visibility),
  )

  app.get(
    '/api/v1/artifacts/:artifact/grants',
    {
      schema: {
        summary: "List an artifact's viewer and editor grants (owner)",
        params: ArtifactParams,
        tags: ['artifacts'],
      },
    },
    async (req) => grantsOf(ctx, await ctx.auth.require(req), req.params.artifact),
  )

  app.put(
    '/api/v1/artifacts/:artifact/grants',
    {
      schema: {
        summary: 'Grant a user viewer or editor access (owner)',
        params: ArtifactParams,
        body: GrantBody,
        tags: ['artifacts'],
      },
    },
    async (req) => grantAccess(ctx, await ctx.auth.require(req), req.params.artifact, req.body.subject, req.body.role),
  )

  app.delete(
    '/api/v1/artifacts/:artifact/grants/:user',
    { schema: { summary: "Remove a user's grant (owner)", params: GrantParams, tags: ['artifacts'] } },
    async (req, reply) => {
      await removeGrant(ctx, await ctx.auth.require(req), req.params.artifact, req.params.user)
      return reply.code(204).send()
    },
  )
}
