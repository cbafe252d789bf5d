/**
 * Identity-provider sign-in (spec Part B, Authentication 4), on when NOTIFY_OAUTH_ISSUER and
 * NOTIFY_OIDC_CLIENT_ID are set: notify is a public client using the authorization code
 * flow with PKCE (S256), a state and a nonce, through openid-client, which verifies the
 * code exchange, the PKCE verifier, the issuer, the audience (our client id) and the nonce
 * of the ID token.
 *   GET /api/v1/auth/providers             which sign-in methods are on (for the web client)
 *   GET /api/v1/auth/oidc/login?return_to  redirect to the provider
 *   GET /api/v1/auth/oidc/callback         the relying-party callback: sets the session cookie
 *
 * The state is random, stored hashed with the nonce and verifier for 10 minutes and bound
 * to the browser by an HttpOnly cookie (SameSite=Lax: the callback is a cross-site
 * top-level navigation); it is single use (whoever deletes the row owns it).
 */
import { generateToken, type HttpApp, hashToken, kitErrors, safeEqual } from '@gatehouse/kit'
import type { FastifyReply, FastifyRequest } from 'fastify'
import * as client from 'openid-client'
import { Type } from 'typebox'
import { createSession, readCookie, sessionCookie } from '../auth/sessions.ts'
import type { Context } from '../context.ts'
import { errors } from '../errors.ts'
import { readerForSubject } from './provision.ts'

const STATE_COOKIE = 'notify_oidc_state'
const STATE_PATH = '/api/v1/auth/oidc'
const STATE_TTL_MS = 10 * 60_000

/** A same-origin path to return to after sign-in; anything else becomes `/`. */
export function safeReturnTo(value: string | undefined): string {
  if (!value?.startsWith('/') || value.startsWith('//') || value.startsWith('/\\')) return '/'
  if (value.length > 1024 || /[\u0000-\u001f\u007f]/.test(value)) return '/'
  return value
}

function stateCookie(value: string, maxAgeSeconds: number, secure: boolean): string {
  const attrs = [
    `${STATE_COOKIE}=${value}`,
    `Path=${STATE_PATH}`,
    'HttpOnly',
    'SameSite=Lax',
    `Max-Age=${maxAgeSeconds}`,
  ]
  if (secure) attrs.push('Secure')
  return attrs.join('; ')
}

export function oidcRoutes(app: HttpApp, ctx: Context) {
  const { config } = ctx
  const db = ctx.database.db
  const secure = config.publicUrl?.startsWith('https:') ?? false
  const redirectUri = `${config.publicOrigin}/api/v1/auth/oidc/callback`
  const logins = ctx.metrics.counter('oidc_logins_total', 'Identity-provider sign-ins by result', ['result'])
  let discovered: Promise<client.Configuration> | undefined
  const configuration = () => {
    if (!config.oidc || !config.oauthIssuer || !config.oidcClientId) throw errors.oidc_disabled()
    const issuer = new URL(config.oauthIssuer)
    discovered ??= client
      .discovery(issuer, config.oidcClientId, undefined, client.None(), {
        ...(issuer.protocol === 'http:' ? { execute: [client.allowInsecureRequests] } : {}),
        timeout: 10,
      })
      .catch((err) => {
        discovered = undefined
        // A dependency failure, not a failed sign-in: 503, and the next attempt retries discovery.
        throw kitErrors.unavailable.with({ cause: err }, 'the identity provider')
      })
    return discovered
  }

  app.get(
    '/api/v1/auth/providers',
    { schema: { summary: 'Show which sign-in methods are on', tags: ['auth'] } },
    async () => ({ local: config.auth, oidc: config.oidc }),
  )

  const LoginQuery = Type.Object(
    { return_to: Type.Optional(Type.String({ maxLength: 1024 })) },
    { additionalProperties: false },
  )
  app.get(
    '/api/v1/auth/oidc/login',
    { schema: { summary: 'Sign in: redirect to the identity provider', tags: ['auth'], querystring: LoginQuery } },
    async (req, reply) => {
      const conf = await configuration()
      const state = generateToken()
      const nonce = generateToken()
      const verifier = client.randomPKCECodeVerifier()
      await db
        .insertInto('oidc_states')
        .values({
          state_hash: hashToken(state),
          nonce,
          code_verifier: verifier,
          return_to: safeReturnTo(req.query.return_to),
          expires_at: new Date(Date.now() + STATE_TTL_MS).toISOString(),
        })
        .execute()
      // Old attempts are dropped as new ones start, so the table stays small.
      await db.deleteFrom('oidc_states').where('expires_at', '<', new Date().toISOString()).execute()
      const url = client.buildAuthorizationUrl(conf, {
        redirect_uri: redirectUri,
        scope: 'openid profile email',
        state,
        nonce,
        code_challenge: await client.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
      })
      reply.header('set-cookie', stateCookie(state, STATE_TTL_MS / 1000, secure))
      return reply.redirect(url.toString(), 302)
    },
  )

  const CallbackQuery = Type.Record(Type.String(), Type.String({ maxLength: 4096 }))
  app.get(
    '/api/v1/auth/oidc/callback',
    {
      schema: {
        summary: 'Finish identity-provider sign-in and set the session cookie',
        tags: ['auth'],
        querystring: CallbackQuery,
      },
    },
    async (req, reply) => {
      try {
        await callback(req, reply)
        logins.inc({ result: 'ok' })
      } catch (err) {
        logins.inc({ result: 'failed' })
        throw err
      }
      return reply
    },
  )

  const callback = async (req: FastifyRequest<{ Querystring: Record<string, string> }>, reply: FastifyReply) => {
    const conf = await configuration()
    const state = req.query.state
    const bound = readCookie(req.headers.cookie, STATE_COOKIE)
    reply.header('set-cookie', stateCookie('', 0, secure))
    if (!state || !bound || !safeEqual(state, bound))
      throw errors.oidc_failed('the sign-in state does not match this browser')
    const row = await db
      .selectFrom('oidc_states')
      .selectAll()
      .where('state_hash', '=', hashToken(state))
      .executeTakeFirst()
    const deleted =
      row && (await db.deleteFrom('oidc_states').where('state_hash', '=', row.state_hash).executeTakeFirst())
    if (!row || Number(deleted?.numDeletedRows ?? 0) !== 1 || row.expires_at <= new Date().toISOString()) {
      throw errors.oidc_failed('the sign-in attempt expired or was already used')
    }
    let claims: client.IDToken | undefined
    try {
      const tokens = await client.authorizationCodeGrant(conf, new URL(req.url, config.publicOrigin), {
        pkceCodeVerifier: row.code_verifier,
        expectedState: state,
        expectedNonce: row.nonce,
        idTokenExpected: true,
      })
      claims = tokens.claims()
    } catch (err) {
      throw errors.oidc_failed.with({ cause: err }, 'the identity provider did not confirm the sign-in')
    }
    if (!claims?.sub) throw errors.oidc_failed('the ID token has no subject')
    const user = await readerForSubject(db, claims)
    if (user.enabled !== 1) throw errors.oidc_failed('this account is disabled')
    const token = await createSession(db, user.id, config)
    reply.header('set-cookie', [stateCookie('', 0, secure), sessionCookie(token, config.sessionMaxAge, secure)])
    reply.redirect(row.return_to, 303)
  }
}
