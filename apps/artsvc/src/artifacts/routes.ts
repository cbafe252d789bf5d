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
import { recordAudit } from '../audit/store.ts'
import { findUserBySubject } from '../auth/users.ts'
import type { AppContext } from '../context.ts'
import type { ArtifactRow, VersionRow } from '../db/schema.ts'
import { errors } from '../errors.ts'
import { ID_PATTERN, iso } from '../ids.ts'
import { readable, requireOwner } from './access.ts'
import {
  deleteGrant,
  getVersion,
  listGrants,
  listVersionFiles,
  listVersions,
  listVisibleArtifacts,
  putGrant,
} from './store.ts'

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

export function artifactRoutes(app: HttpApp, ctx: AppContext) {
  app.get('/api/v1/artifacts', { schema: { tags: ['artifacts'] } }, async (req) => {
    const principal = await ctx.auth.require(req)
    const rows = await listVisibleArtifacts(ctx.db, principal.user.id)
    return {
      artifacts: rows.map((r) =>
        artifactJson(ctx, r, {
          owner: r.owner_subject,
          role: r.owner_id === principal.user.id ? 'owner' : (r.grant_role ?? 'reader'),
        }),
      ),
    }
  })

  app.get('/api/v1/artifacts/:artifact', { schema: { params: ArtifactParams, tags: ['artifacts'] } }, async (req) => {
    const principal = await ctx.auth.require(req)
    const { artifact, role } = await readable(ctx, principal, req.params.artifact)
    const versions = await listVersions(ctx.db, artifact.id)
    return artifactJson(ctx, artifact, {
      role,
      entrypoint: versions[0]?.entrypoint,
      versions: versions.map(versionJson),
    })
  })

  app.get(
    '/api/v1/artifacts/:artifact/versions/:number',
    { schema: { params: VersionParams, tags: ['artifacts'] } },
    async (req) => {
      const principal = await ctx.auth.require(req)
      const { artifact } = await readable(ctx, principal, req.params.artifact)
      const version = await getVersion(ctx.db, artifact.id, req.params.number)
      if (!version) throw errors.version_not_found()
      const files = await listVersionFiles(ctx.db, version.id)
      return {
        ...versionJson(version),
        files: files.map((f) => ({
          path: f.path,
          size: Number(f.size),
          sha256: f.sha256,
          content_type: f.content_type,
        })),
      }
    },
  )

  app.put(
    '/api/v1/artifacts/:artifact/visibility',
    { schema: { params: ArtifactParams, body: Visibility, tags: ['artifacts'] } },
    async (req) => {
      const principal = await ctx.auth.require(req)
      const { artifact } = await requireOwner(ctx, principal, req.params.artifact, 'change the visibility')
      const now = ctx.now()
      await ctx.db.transaction().execute(async (tx) => {
        await tx
          .updateTable('artifacts')
          .set({ visibility: req.body.visibility, updated_at: now })
          .where('id', '=', artifact.id)
          .execute()
        await recordAudit(
          tx,
          principal,
          {
            action: 'artifact.visibility',
            targetType: 'artifact',
            targetId: artifact.id,
            details: { visibility: req.body.visibility },
          },
          now,
        )
      })
      return artifactJson(ctx, { ...artifact, visibility: req.body.visibility, updated_at: now })
    },
  )

  app.get(
    '/api/v1/artifacts/:artifact/grants',
    { schema: { params: ArtifactParams, tags: ['artifacts'] } },
    async (req) => {
      const principal = await ctx.auth.require(req)
      const { artifact } = await requireOwner(ctx, principal, req.params.artifact, 'see the grants')
      const grants = await listGrants(ctx.db, artifact.id)
      return {
        grants: grants.map((g) => ({
          user: g.user_id,
          subject: g.oidc_subject,
          role: g.role,
          created_at: iso(Number(g.created_at)),
        })),
      }
    },
  )

  app.put(
    '/api/v1/artifacts/:artifact/grants',
    { schema: { params: ArtifactParams, body: GrantBody, tags: ['artifacts'] } },
    async (req) => {
      const principal = await ctx.auth.require(req)
      const { artifact } = await requireOwner(ctx, principal, req.params.artifact, 'grant access')
      const user = await findUserBySubject(ctx.db, req.body.subject)
      if (!user) throw errors.user_not_found()
      if (user.id === artifact.owner_id) throw errors.access_denied('grant access to the owner')
      const now = ctx.now()
      await ctx.db.transaction().execute(async (tx) => {
        await putGrant(tx, {
          artifact_id: artifact.id,
          user_id: user.id,
          role: req.body.role,
          created_by: principal.user.id,
          created_at: now,
        })
        await recordAudit(
          tx,
          principal,
          {
            action: 'grant.put',
            targetType: 'artifact',
            targetId: artifact.id,
            details: { user: user.id, role: req.body.role },
          },
          now,
        )
      })
      return { user: user.id, subject: user.oidc_subject, role: req.body.role }
    },
  )

  app.delete(
    '/api/v1/artifacts/:artifact/grants/:user',
    { schema: { params: GrantParams, tags: ['artifacts'] } },
    async (req, reply) => {
      const principal = await ctx.auth.require(req)
      const { artifact } = await requireOwner(ctx, principal, req.params.artifact, 'remove access')
      const now = ctx.now()
      const removed = await ctx.db.transaction().execute(async (tx) => {
        const gone = await deleteGrant(tx, artifact.id, req.params.user)
        if (gone)
          await recordAudit(
            tx,
            principal,
            {
              action: 'grant.delete',
              targetType: 'artifact',
              targetId: artifact.id,
              details: { user: req.params.user },
            },
            now,
          )
        return gone
      })
      if (!removed) throw errors.user_not_found()
      return reply.code(204).send()
    },
  )
}
