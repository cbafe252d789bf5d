/**
 * A browser that navigates to an address no route takes on the management origin gets a page
 * in the site's own frame (theme, header, a way home) instead of the JSON error; API clients,
 * and every path under the API, MCP, upload and well-known prefixes, keep the coded JSON 404.
 * The content origin never gets here: its unknown paths are refused before routing
 * (`wrong_origin`, server.ts), as before. The path is never echoed.
 *
 * The kit's `notFoundPage` is synchronous and knows only the path, so it answers a default
 * frame; an `onSend` hook then renders it with the active theme and the signed-in user, and
 * gives it the pages' security headers (CSP and the rest) that the kit does not set.
 */
import type { HttpApp } from '@gatehouse/kit'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { AppContext } from '../context.ts'
import { pageHeaders, renderPage } from './html.ts'
import { pageUser } from './routes.ts'
import { DEFAULT_SITE_NAME, type PageTheme, pageTheme } from './theme.ts'

/** Machine paths: a typo there is answered for a program, in JSON. */
const API_PREFIXES = ['/api/', '/mcp', '/upload/', '/.well-known/', '/t/', '/__artsvc/', '/branding/images/']

const DEFAULT_THEME: PageTheme = {
  siteName: DEFAULT_SITE_NAME,
  message: '',
  logoUrl: null,
  faviconUrl: null,
  palette: null,
  version: '0',
}

const BODY =
  '<section class="panel narrow not-found"><h1>Page not found</h1><p>There is nothing at this address. It may have been mistyped, copied only in part, or removed.</p><p><a class="button primary" href="/">Go to the library</a></p></section>'

function page(theme: PageTheme, user?: Parameters<typeof renderPage>[0]['user']): string {
  return renderPage({ title: 'Page not found', theme, user, body: BODY })
}

/** For `createHttpApp({ notFoundPage })`. */
export function notFoundPage(path: string): string | undefined {
  if (API_PREFIXES.some((prefix) => path === prefix.replace(/\/$/, '') || path.startsWith(prefix))) return undefined
  return page(DEFAULT_THEME)
}

/** The theme, the user and the headers for that page (see above). */
export function notFoundPageHooks(app: HttpApp, ctx: AppContext) {
  app.addHook('onSend', async (req: FastifyRequest, reply: FastifyReply, payload) => {
    if (!req.is404 || reply.statusCode !== 404) return payload
    if (!String(reply.getHeader('content-type') ?? '').startsWith('text/html')) return payload
    reply.headers(pageHeaders())
    try {
      const [theme, principal] = await Promise.all([pageTheme(ctx), ctx.auth.principal(req).catch(() => undefined)])
      return page(theme, principal && pageUser(principal))
    } catch (err) {
      // The database is unavailable: the default frame still says what happened.
      req.log.warn({ err }, 'not-found page without the theme')
      return payload
    }
  })
}
