/**
 * The web console (apps/dnsctl/web/: plain ES modules, no build step) and its sign-in:
 *   GET    /console/, /console/<file>   the page and its modules (console listener only)
 *   POST   /console/session             {code} from a sign-in link -> session cookie + CSRF token
 *   GET    /console/session             the signed-in name, CSRF token and expiry
 *   DELETE /console/session             sign out
 *   POST   /console/links               (API listener only) mint a one-time sign-in link
 * Every other console request is an API request under the guard's rules (guard.ts).
 */
import { join } from 'node:path'
import { type HttpApp, kitErrors } from '@gatehouse/kit'
import { readCookie } from '@gatehouse/kit/credentials.ts'
import { loadWebAssets, sendWebAsset } from '@gatehouse/kit/web-assets.ts'
import type { FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import type { Config } from '../config.ts'
import { errors } from '../errors.ts'
import { CSP } from './csp.ts'
import { CONSOLE_PREFIX, consoleGuard, LINKS_PATH, SESSION_COOKIE } from './guard.ts'
import { ConsoleListener } from './listener.ts'
import { ConsoleSessions } from './sessions.ts'

const WEB = join(import.meta.dirname, '..', '..', 'web')

const Name = Type.String({ minLength: 1, maxLength: 100, pattern: '^[\\x21-\\x7e][\\x20-\\x7e]*$' })
const LinkBody = Type.Union([Type.Object({ name: Type.Optional(Name) }, { additionalProperties: false }), Type.Null()])
const SessionBody = Type.Object(
  { code: Type.String({ minLength: 1, maxLength: 100 }) },
  { additionalProperties: false },
)

/** The names the console is reached by, for the Host guard: its listen address and public URL. */
export function consoleHostNames(config: Config): string[] {
  const names: string[] = []
  if (config.console.listen) names.push(config.console.listen.host)
  if (config.console.publicUrl) names.push(new URL(config.console.publicUrl).hostname.replace(/^\[|\]$/g, ''))
  return names
}

export interface Console {
  listener: ConsoleListener
  sessions: ConsoleSessions
}

export function consoleRoutes(app: HttpApp, config: Config): Console {
  const sessions = new ConsoleSessions({ sessionTtlMs: config.console.sessionTtl, linkTtlMs: config.console.linkTtl })
  const listener = new ConsoleListener(app)
  app.addHook('onRequest', consoleGuard(listener, sessions))
  const secure = config.console.publicUrl?.startsWith('https:') ?? false
  const cookie = (value: string, maxAge: number) =>
    [
      `${SESSION_COOKIE}=${value}`,
      'Path=/',
      'HttpOnly',
      'SameSite=Strict',
      `Max-Age=${Math.max(0, Math.floor(maxAge / 1000))}`,
      ...(secure ? ['Secure'] : []),
    ].join('; ')

  for (const [file, asset] of loadWebAssets(WEB)) {
    const path = file === 'index.html' ? `${CONSOLE_PREFIX}/` : `${CONSOLE_PREFIX}/${file}`
    app.get(path, { schema: { hide: true } }, async (req, reply) => {
      reply.header('content-security-policy', CSP).header('referrer-policy', 'no-referrer')
      return sendWebAsset(req, reply, asset)
    })
  }
  // The console listener's root opens the console (on the API listener the guard answers 404).
  app.get('/', { schema: { hide: true } }, async (req, reply) => {
    if (!listener.owns(req.raw)) throw kitErrors.not_found()
    return reply.redirect(`${CONSOLE_PREFIX}/`, 302)
  })

  const sessionInfo = (s: { name: string; csrfToken: string; expiresAt: number }) => ({
    name: s.name,
    csrf_token: s.csrfToken,
    expires_at: new Date(s.expiresAt).toISOString(),
  })

  app.post(`${CONSOLE_PREFIX}/session`, { schema: { hide: true, body: SessionBody } }, async (req, reply) => {
    const opened = sessions.redeem((req.body as { code: string }).code)
    if (!opened) throw errors.console_link_invalid()
    reply.header('set-cookie', cookie(opened.token, config.console.sessionTtl)).header('cache-control', 'no-store')
    return sessionInfo(opened.session)
  })
  app.get(`${CONSOLE_PREFIX}/session`, { schema: { hide: true } }, async (req, reply) => {
    reply.header('cache-control', 'no-store')
    return sessionInfo(sessionOf(req))
  })
  app.delete(`${CONSOLE_PREFIX}/session`, { schema: { hide: true } }, async (req, reply) => {
    sessions.end(readCookie(req.headers.cookie, SESSION_COOKIE))
    reply.header('set-cookie', cookie('', 0))
    return { signed_out: true }
  })

  app.post(
    LINKS_PATH,
    { schema: { summary: 'Mint a one-time sign-in link for the web console', tags: ['console'], body: LinkBody } },
    async (req, reply) => {
      const base = config.console.publicUrl?.replace(/\/+$/, '') ?? listener.base
      if (!base) throw errors.console_disabled()
      const name = (req.body as { name?: string } | null)?.name ?? 'operator'
      const link = sessions.mintLink(name)
      reply.code(201).header('cache-control', 'no-store')
      // The code rides in the fragment: browsers never send it, so it reaches no log or proxy.
      return {
        url: `${base}${CONSOLE_PREFIX}/#code=${link.code}`,
        name,
        expires_at: new Date(link.expiresAt).toISOString(),
      }
    },
  )

  return { listener, sessions }
}

function sessionOf(req: FastifyRequest) {
  if (!req.consoleSession) throw errors.console_session_required()
  return req.consoleSession
}
