/** Dashboard sign-in: an administrator token is exchanged for a session cookie. */
import { type HttpApp, hashToken } from '@gatehouse/kit'
import { Type } from 'typebox'
import { deleteExpiredSessions, deleteSession, findAdminByTokenHash, insertSession } from '../admins/store.ts'
import type { AppContext } from '../context.ts'
import { errors } from '../errors.ts'
import { adminOf, checkOrigin } from './guards.ts'
import { noteAdminUse, refuseExpired, SESSION_COOKIE } from './principal.ts'
import { cookieFrom, newToken } from './tokens.ts'

export function sessionRoutes(app: HttpApp, ctx: AppContext) {
  app.post(
    '/api/session',
    {
      schema: {
        summary: 'Sign in to the dashboard with an administrator token (sets a session cookie)',
        body: Type.Object({ token: Type.String({ minLength: 1, maxLength: 200 }) }, { additionalProperties: false }),
      },
    },
    async (req, reply) => {
      // Login CSRF: a browser sign-in must come from this page.
      if (req.headers.origin !== undefined) checkOrigin(req)
      const admin = await findAdminByTokenHash(ctx.database.db, hashToken(req.body.token))
      if (!admin) throw errors.unauthorized('unknown administrator token')
      const now = Date.now()
      refuseExpired(admin, now)
      await noteAdminUse(ctx.database.db, admin)
      const session = newToken('session')
      // A session never outlives the token that opened it.
      const ttlMs =
        admin.expires_ms === null
          ? ctx.settings.sessionTtlMs
          : Math.min(ctx.settings.sessionTtlMs, Number(admin.expires_ms) - now)
      await deleteExpiredSessions(ctx.database.db, now)
      await insertSession(ctx.database.db, session.hash, admin.name, now, ttlMs)
      const maxAge = Math.floor(ttlMs / 1000)
      reply.header(
        'set-cookie',
        `${SESSION_COOKIE}=${session.token}; Path=/; Max-Age=${maxAge}; HttpOnly; Secure; SameSite=Strict`,
      )
      return { admin: admin.name }
    },
  )

  app.get(
    '/api/session',
    {
      onRequest: ctx.guards.requireAdmin,
      schema: { summary: 'Show the signed-in administrator and when its token expires (null: never)' },
    },
    async (req) => {
      const expires = req.principal?.type === 'admin' ? req.principal.tokenExpiresMs : null
      return { admin: adminOf(req), token_expires_at: expires === null ? null : new Date(expires).toISOString() }
    },
  )

  app.delete(
    '/api/session',
    { onRequest: ctx.guards.requireAdmin, schema: { summary: 'Sign out (end the dashboard session)' } },
    async (req, reply) => {
      const cookie = cookieFrom(req.headers.cookie, SESSION_COOKIE)
      if (cookie) await deleteSession(ctx.database.db, hashToken(cookie))
      reply.header('set-cookie', `${SESSION_COOKIE}=; Path=/; Max-Age=0; HttpOnly; Secure; SameSite=Strict`)
      return reply.code(204).send()
    },
  )
}
