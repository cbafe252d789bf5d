/**
 * Sign-in on the management origin (oidc mode), with openid-client: authorization code
 * with PKCE, state and nonce. The state is bound to the browser by a short-lived cookie
 * and stored (hashed) with the verifier and nonce; it is single-use.
 *   GET  /api/v1/auth/login[?return_to=/a/…]  redirect to the identity provider
 *   GET  /api/v1/auth/oidc/callback           finish sign-in, set the session cookie
 *   POST /api/v1/auth/logout                  end the session
 *   GET  /api/v1/me                           who am I (any auth method)
 */

import type { HttpApp } from '@gatehouse/kit'
import { generateToken, hashToken, safeEqual } from '@gatehouse/kit'
import * as client from 'openid-client'
import { Type } from 'typebox'
import { recordAudit } from '../audit/store.ts'
import type { AppContext } from '../context.ts'
import { errors } from '../errors.ts'
import { saveLoginState, takeLoginState } from './login-states.ts'
import { groupsFrom, isAdminIdentity } from './principal.ts'
import { safeReturnTo } from './return-to.ts'
import { createSession, deleteSession, SESSION_COOKIE } from './sessions.ts'
import { upsertUser } from './users.ts'

const STATE_COOKIE = 'artsvc_oidc_state'
const STATE_TTL_MS = 10 * 60_000
const LoginQuery = Type.Object(
  { return_to: Type.Optional(Type.String({ maxLength: 2048 })) },
  { additionalProperties: false },
)
const CallbackQuery = Type.Record(Type.String(), Type.String())

export function authRoutes(app: HttpApp, ctx: AppContext) {
  const redirectUri = `${ctx.config.publicOrigin}/api/v1/auth/oidc/callback`
  const cookieBase = { httpOnly: true, secure: true, sameSite: 'lax' as const }
  const requireOidc = () => {
    if (ctx.config.authMode !== 'oidc' || !ctx.issuer) throw errors.login_unavailable(ctx.config.authMode)
    return ctx.issuer
  }

  app.get(
    '/api/v1/auth/login',
    { schema: { summary: 'Sign in: redirect to the identity provider', querystring: LoginQuery, tags: ['auth'] } },
    async (req, reply) => {
      const issuer = requireOidc()
      const configuration = await issuer.configuration().catch((err) => {
        throw errors.login_failed.with({ cause: err }, 'the identity provider is unreachable')
      })
      const state = generateToken()
      const nonce = generateToken()
      const verifier = client.randomPKCECodeVerifier()
      await saveLoginState(ctx.database.db, {
        state_hash: hashToken(state),
        nonce,
        code_verifier: verifier,
        return_to: safeReturnTo(req.query.return_to, ctx.config.publicOrigin),
        expires_at: ctx.clock.now() + STATE_TTL_MS,
      })
      const url = client.buildAuthorizationUrl(configuration, {
        redirect_uri: redirectUri,
        scope: 'openid profile email',
        state,
        nonce,
        code_challenge: await client.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
      })
      reply.setCookie(STATE_COOKIE, state, { ...cookieBase, path: '/api/v1/auth', maxAge: STATE_TTL_MS / 1000 })
      return reply.header('cache-control', 'no-store').redirect(url.toString(), 302)
    },
  )

  app.get(
    '/api/v1/auth/oidc/callback',
    {
      schema: { summary: 'Finish OIDC sign-in and set the session cookie', querystring: CallbackQuery, tags: ['auth'] },
    },
    async (req, reply) => {
      const issuer = requireOidc()
      const state = req.query.state
      const bound = req.cookies[STATE_COOKIE]
      if (!state || !bound || !safeEqual(state, bound))
        throw errors.login_failed('the sign-in state does not match this browser')
      const row = await takeLoginState(ctx.database.db, hashToken(state))
      if (!row || Number(row.expires_at) <= ctx.clock.now()) {
        throw errors.login_failed('the sign-in attempt expired or was already used')
      }
      reply.clearCookie(STATE_COOKIE, { ...cookieBase, path: '/api/v1/auth' })
      let claims: client.IDToken | undefined
      try {
        const configuration = await issuer.configuration()
        const tokens = await client.authorizationCodeGrant(configuration, new URL(req.url, ctx.config.publicOrigin), {
          pkceCodeVerifier: row.code_verifier,
          expectedState: state,
          expectedNonce: row.nonce,
          idTokenExpected: true,
        })
        claims = tokens.claims()
      } catch (err) {
        throw errors.login_failed.with({ cause: err }, 'the identity provider did not confirm the sign-in')
      }
      if (!claims?.sub) throw errors.login_failed('the ID token has no subject')
      const now = ctx.clock.now()
      const user = await upsertUser(
        ctx.database.db,
        claims.sub,
        {
          name: typeof claims.name === 'string' ? claims.name : undefined,
          email: typeof claims.email === 'string' ? claims.email : undefined,
        },
        now,
      )
      const groups = groupsFrom(claims.groups)
      const token = await createSession(ctx.database.db, user.id, groups, now, ctx.config.sessionTtl)
      await recordAudit(
        ctx.database.db,
        { user, groups, isAdmin: false, via: 'session' },
        { action: 'session.login', targetType: 'session', targetId: user.id },
        now,
      )
      reply.setCookie(SESSION_COOKIE, token, {
        ...cookieBase,
        path: '/',
        maxAge: Math.floor(ctx.config.sessionTtl / 1000),
      })
      // Checked again: a state row may predate a stricter rule.
      return reply
        .header('cache-control', 'no-store')
        .redirect(safeReturnTo(row.return_to, ctx.config.publicOrigin), 303)
    },
  )

  app.post(
    '/api/v1/auth/logout',
    { schema: { summary: 'Sign out (end the session)', tags: ['auth'] } },
    async (req, reply) => {
      const token = req.cookies[SESSION_COOKIE]
      if (token) await deleteSession(ctx.database.db, token)
      reply.clearCookie(SESSION_COOKIE, { ...cookieBase, path: '/' })
      return reply.code(204).send()
    },
  )

  app.get('/api/v1/me', { schema: { summary: "Show the caller's identity", tags: ['auth'] } }, async (req) => {
    const p = await ctx.auth.require(req)
    return {
      id: p.user.id,
      subject: p.user.oidc_subject,
      name: p.user.display_name,
      email: p.user.email,
      groups: p.groups,
      admin: isAdminIdentity(p.user.oidc_subject, p.groups, ctx.config.adminSubjects, ctx.config.adminGroups),
      via: p.via,
    }
  })
}
