/**
 * A browser that navigates to an address no route takes on the management origin gets a page
 * in the site's own frame (theme, header, a way home) instead of the JSON error; API clients,
 * and every path under the API, MCP, upload and well-known prefixes, keep the coded JSON 404.
 * The content origin never gets here: its unknown paths are refused before routing
 * (`wrong_origin`, server.ts), as before. The path is never echoed.
 *
 * The page has the active theme and the signed-in user, and the pages' security headers (CSP
 * and the rest): no route handler runs for it. With the database down it is the default frame.
 */
import type { NotFoundPageFn } from '@gatehouse/kit'
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
export function notFoundPage(ctx: AppContext): NotFoundPageFn {
  return async (path, req) => {
    if (API_PREFIXES.some((prefix) => path === prefix.replace(/\/$/, '') || path.startsWith(prefix))) return undefined
    let html: string
    try {
      const [theme, principal] = await Promise.all([pageTheme(ctx), ctx.auth.principal(req).catch(() => undefined)])
      html = page(theme, principal && pageUser(principal))
    } catch (err) {
      // The database is unavailable: the default frame still says what happened.
      req.log.warn({ err }, 'not-found page without the theme')
      html = page(DEFAULT_THEME)
    }
    return { html, headers: pageHeaders() }
  }
}
