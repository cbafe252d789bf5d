/**
 * Sign-in and sign-out for local readers (paths ours: the spec leaves them unshown).
 *   POST /api/v1/auth/login   {username, password} -> sets the session cookie
 *   POST /api/v1/auth/logout  ends the session
 *   GET  /api/v1/auth/me      the signed-in reader
 */
import type { HttpApp } from '@gatehouse/kit'
import { bearerToken } from '@gatehouse/kit/credentials.ts'
import { Type } from 'typebox'
import type { Context } from '../context.ts'
import { errors } from '../errors.ts'
import { userResponse } from '../users/service.ts'
import { findUserById } from '../users/store.ts'
import { MAX_PASSWORD_LENGTH } from './passwords.ts'
import {
  clearedSessionCookie,
  createSession,
  deleteSession,
  readCookie,
  SESSION_COOKIE,
  sessionCookie,
} from './sessions.ts'
import { loginThrottle } from './throttle.ts'

const Login = Type.Object(
  {
    username: Type.String({ minLength: 1, maxLength: 64 }),
    password: Type.String({ minLength: 1, maxLength: MAX_PASSWORD_LENGTH }),
  },
  { additionalProperties: false },
)

export function authRoutes(app: HttpApp, ctx: Context) {
  const secure = ctx.config.publicUrl?.startsWith('https:') ?? false
  const logins = ctx.metrics.counter('logins_total', 'Sign-in attempts by result', ['result'])
  const throttle = loginThrottle(ctx.database.db, ctx.config)

  const limits = { onRequest: throttle.byAddress, preHandler: throttle.byAccount }
  app.post(
    '/api/v1/auth/login',
    {
      schema: {
        summary: 'Sign in with a username and password (sets the session cookie)',
        tags: ['auth'],
        body: Login,
      },
      ...limits,
    },
    async (req, reply) => {
      if (!ctx.config.auth) throw errors.invalid_payload('reader authentication is off (development mode)')
      try {
        const user = await ctx.users.login(req.body.username, req.body.password)
        const token = await createSession(ctx.database.db, user.id, ctx.config)
        logins.inc({ result: 'ok' })
        reply.header('set-cookie', sessionCookie(token, ctx.config.sessionMaxAge, secure))
        return { user: userResponse(user) }
      } catch (err) {
        logins.inc({ result: 'failed' })
        throw err
      }
    },
  )

  app.post(
    '/api/v1/auth/logout',
    { schema: { summary: 'Sign out (end the session)', tags: ['auth'] } },
    async (req, reply) => {
      // A browser's cookie, or a desktop app's bearer session (desktop/).
      const presented = bearerToken(req.headers.authorization)
      const bearer = presented?.startsWith('nts_') && presented.length <= 204 ? presented.slice(4) : undefined
      const token = readCookie(req.headers.cookie, SESSION_COOKIE) ?? bearer
      if (token) await deleteSession(ctx.database.db, token)
      reply.header('set-cookie', clearedSessionCookie(secure))
      return reply.code(204).send()
    },
  )

  app.get('/api/v1/auth/me', { schema: { summary: 'Show the signed-in reader', tags: ['auth'] } }, async (req) => {
    const reader = await ctx.guard.requireReader(req)
    const user = await findUserById(ctx.database.db, reader.id)
    if (!user) throw errors.session_required()
    return { user: userResponse(user), auth: ctx.config.auth }
  })
}
