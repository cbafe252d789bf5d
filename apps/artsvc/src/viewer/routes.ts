/**
 * Browser routes on the management origin:
 *   GET /a/{artifact}[?version=N]  signed-in viewer (owner, grants, or authenticated visibility)
 *   GET /s/{secret}                share entry: spends a view, sets the share-session cookie
 *   GET /shared/{share}/           shared viewer: accepts only that cookie
 * (Their stylesheet and script are the UI's, under /static/app/: ui/routes.ts.)
 */
import type { HttpApp } from '@gatehouse/kit'
import type { FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import { readable } from '../artifacts/access.ts'
import { getActiveArtifact, getVersion, getVersionById, versionNumbers } from '../artifacts/store.ts'
import { publicNameOf } from '../auth/users.ts'
import type { AppContext } from '../context.ts'
import type { VersionRow } from '../db/schema.ts'
import { errors } from '../errors.ts'
import { ID_PATTERN } from '../ids.ts'
import { openShare } from '../shares/service.ts'
import { getShare, shareIsLive } from '../shares/store.ts'
import { htmlErrors } from '../ui/html.ts'
import { pageUser } from '../ui/routes.ts'
import { pageTheme } from '../ui/theme.ts'
import { encodePath, sendViewer } from './page.ts'

export const SHARE_COOKIE = 'artsvc_share'

const ArtifactParams = Type.Object({ artifact: Type.String({ pattern: ID_PATTERN }) })
const VersionQuery = Type.Object(
  { version: Type.Optional(Type.Integer({ minimum: 1 })) },
  { additionalProperties: false },
)
const SecretParams = Type.Object({ secret: Type.String({ maxLength: 128 }) })
const ShareParams = Type.Object({ share: Type.String({ pattern: ID_PATTERN }) })

export function viewerRoutes(app: HttpApp, ctx: AppContext) {
  const ownerName = (userId: string) => publicNameOf(ctx.database.db, userId)
  const errorHandler = htmlErrors(
    () => pageTheme(ctx),
    async (req: FastifyRequest) => {
      const p = await ctx.auth.principal(req)
      return p && pageUser(p)
    },
  )
  const frameUrl = (version: VersionRow, shareId: string | undefined) => {
    const ticket = ctx.signer.ticket(version.id, shareId, ctx.clock.now() + ctx.config.viewerTicketTtl)
    return `${ctx.config.contentOrigin}/t/${ticket}/${encodePath(version.entrypoint)}`
  }

  app.get(
    '/a/:artifact',
    { schema: { params: ArtifactParams, querystring: VersionQuery, hide: true }, errorHandler },
    async (req, reply) => {
      const principal = await ctx.auth.principal(req)
      if (!principal) {
        if (ctx.config.authMode === 'oidc') {
          const back = `/a/${req.params.artifact}${req.query.version ? `?version=${req.query.version}` : ''}`
          return reply.redirect(`/api/v1/auth/login?return_to=${encodeURIComponent(back)}`, 302)
        }
        throw errors.authentication_required()
      }
      const { artifact } = await readable(ctx, principal, req.params.artifact)
      const version = await getVersion(
        ctx.database.db,
        artifact.id,
        req.query.version ?? Number(artifact.latest_version),
      )
      if (!version) throw errors.version_not_found()
      const [theme, owner, numbers] = await Promise.all([
        pageTheme(ctx),
        ownerName(artifact.owner_id),
        versionNumbers(ctx.database.db, artifact.id),
      ])
      return sendViewer(reply, {
        title: version.title,
        version: Number(version.number),
        frameUrl: frameUrl(version, undefined),
        contentOrigin: ctx.config.contentOrigin,
        theme,
        owner,
        user: pageUser(principal),
        switcher: { artifact: artifact.id, versions: numbers.map((v) => Number(v.number)).sort((a, b) => b - a) },
      })
    },
  )

  app.get('/s/:secret', { schema: { params: SecretParams, hide: true }, errorHandler }, async (req, reply) => {
    const share = await openShare(ctx, req.params.secret)
    const expires = ctx.clock.now() + ctx.config.shareSessionTtl
    reply.setCookie(SHARE_COOKIE, ctx.signer.shareSession(share.id, expires), {
      path: `/shared/${share.id}`,
      httpOnly: true,
      secure: true,
      sameSite: 'lax',
      maxAge: Math.floor(ctx.config.shareSessionTtl / 1000),
    })
    reply.header('referrer-policy', 'no-referrer').header('cache-control', 'no-store')
    return reply.redirect(`/shared/${share.id}/`, 303)
  })

  app.get('/shared/:share/', { schema: { params: ShareParams, hide: true }, errorHandler }, async (req, reply) => {
    const cookie = req.cookies[SHARE_COOKIE]
    const now = ctx.clock.now()
    if (!cookie || ctx.signer.verifyShareSession(cookie, now) !== req.params.share)
      throw errors.share_session_required()
    if (!(await shareIsLive(ctx.database.db, req.params.share, now)))
      throw errors.share_unavailable('is no longer available')
    const share = (await getShare(ctx.database.db, req.params.share))!
    const artifact = await getActiveArtifact(ctx.database.db, share.artifact_id)
    const version = share.version_id
      ? await getVersionById(ctx.database.db, share.version_id)
      : artifact && (await getVersion(ctx.database.db, artifact.id, Number(artifact.latest_version)))
    if (!version) throw errors.share_unavailable('is no longer available')
    const [theme, owner] = await Promise.all([pageTheme(ctx), ownerName(artifact?.owner_id ?? '')])
    return sendViewer(reply, {
      title: version.title,
      version: Number(version.number),
      frameUrl: frameUrl(version, share.id),
      contentOrigin: ctx.config.contentOrigin,
      theme,
      owner,
      note: 'shared view',
    })
  })
}
