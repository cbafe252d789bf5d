/**
 * Who may do what on which listener (an onRequest hook, after the kit's Host guard):
 *   API listener      the API as before (loopback, no authentication); console pages are not
 *                     served here (404) except POST /console/links, which mints a sign-in link
 *                     (outside /v1: it changes no DNS data, so an HA secondary's read-only
 *                     guard leaves it alone and a secondary's console can be signed in to).
 *   console listener  the page and its files, and the sign-in exchange, without a session;
 *                     everything else (every /v1 route, /metrics, /openapi.json) needs the
 *                     session cookie; every change also needs the session's X-CSRF-Token header
 *                     and an Origin equal to the console's own. Changes are audited as
 *                     `console:<name>`, whatever X-Dns-Actor the browser sent.
 */
import { kitErrors, wantsHtml } from '@gatehouse/kit'
import { readCookie } from '@gatehouse/kit/credentials.ts'
import type { FastifyRequest } from 'fastify'
import { errors } from '../errors.ts'
import type { ConsoleListener } from './listener.ts'
import type { ConsoleSession, ConsoleSessions } from './sessions.ts'

export const SESSION_COOKIE = 'dnsctl_console'
export const CONSOLE_PREFIX = '/console'
export const LINKS_PATH = `${CONSOLE_PREFIX}/links`
const SAFE_METHODS = new Set(['GET', 'HEAD'])

declare module 'fastify' {
  interface FastifyRequest {
    /** The console session of a request on the console listener (set by the guard). */
    consoleSession?: ConsoleSession
  }
}

/**
 * The route pattern the router matched (never the raw URL: `/console/%2e%2e/v1/zones` or other
 * spellings must not pass as a page file); '' for a request no route matches (it gets a 404).
 */
function routeOf(req: FastifyRequest): string {
  return req.routeOptions.url ?? ''
}

function isConsolePath(route: string): boolean {
  return route === CONSOLE_PREFIX || route.startsWith(`${CONSOLE_PREFIX}/`)
}

/** A browser sends Origin with every POST, PUT and DELETE; it must name this very host. */
function checkOrigin(req: FastifyRequest) {
  const origin = req.headers.origin
  let host: string | undefined
  try {
    host = origin === undefined ? undefined : new URL(origin).host
  } catch {}
  if (host === undefined || host !== req.headers.host) throw errors.origin_mismatch()
}

export function consoleGuard(listener: ConsoleListener, sessions: ConsoleSessions) {
  return async (req: FastifyRequest) => {
    const route = routeOf(req)
    if (!listener.owns(req.raw)) {
      if (isConsolePath(route) && route !== LINKS_PATH) throw kitErrors.not_found()
      return
    }
    if (route === LINKS_PATH) throw kitErrors.not_found()
    // A browser's navigation to an address no route takes: the console's "not found" page
    // (not-found-page.ts, no data in it, its own CSP), signed in or not.
    if (route === '' && SAFE_METHODS.has(req.method) && wantsHtml(req.headers.accept)) return
    const isSignIn = route === `${CONSOLE_PREFIX}/session` && req.method === 'POST'
    if (isSignIn) return checkOrigin(req)
    // The page and its modules carry no data: served to anyone who reaches the listener.
    const isPageFile = isConsolePath(route) && route !== `${CONSOLE_PREFIX}/session`
    if (SAFE_METHODS.has(req.method) && (route === '/' || isPageFile)) return
    const session = sessions.session(readCookie(req.headers.cookie, SESSION_COOKIE))
    if (!session) throw errors.console_session_required()
    if (!SAFE_METHODS.has(req.method)) {
      checkOrigin(req)
      const given = req.headers['x-csrf-token']
      if (!sessions.csrfMatches(session, typeof given === 'string' ? given : undefined)) {
        throw errors.csrf_token_invalid()
      }
    }
    req.consoleSession = session
    req.headers['x-dns-actor'] = `console:${session.name}`
  }
}
