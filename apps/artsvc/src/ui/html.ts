/**
 * The frame every management-origin page shares (library, /admin, the viewers, error
 * pages): the head with the theme's stylesheet and favicon, the branded header, and the
 * response headers. User text is always escaped; scripts are only same-origin modules.
 */
import type { FastifyReply } from 'fastify'
import type { PageTheme } from './theme.ts'

export const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!)

export interface PageUser {
  name: string
  isAdmin: boolean
  /** A browser session of ours (oidc mode); an edge proxy's or a bearer identity cannot sign out here. */
  canSignOut: boolean
}

export interface PageOptions {
  title: string
  theme: PageTheme
  /** Signed-in user shown in the header (with sign-out); none on share pages. */
  user?: PageUser | undefined
  /** Which nav entry is current. */
  current?: 'library' | 'admin' | undefined
  /** ES module under /static/app/ that drives the page. */
  script?: string | undefined
  /** Extra stylesheets under /static/app/ after app.css (e.g. admin.css). */
  styles?: string[] | undefined
  /** Extra class on <body> (the viewer lays out differently). */
  bodyClass?: string | undefined
  /** Escaped HTML of the page body below the header. */
  body: string
  /** Origin allowed in frame-src (the viewer's content origin). */
  frameOrigin?: string | undefined
}

export function csp(frameOrigin?: string): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    // blob: and data: let the appearance editor preview a chosen logo before upload.
    "img-src 'self' data: blob:",
    "connect-src 'self'",
    frameOrigin ? `frame-src ${frameOrigin}` : undefined,
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ]
    .filter(Boolean)
    .join('; ')
}

function header(o: PageOptions): string {
  const t = o.theme
  const logo = t.logoUrl ? `<img class="logo" src="${escapeHtml(t.logoUrl)}" alt="">` : ''
  const nav = o.user
    ? `<nav aria-label="Main"><a href="/"${o.current === 'library' ? ' aria-current="page"' : ''}>Library</a>${
        o.user.isAdmin ? `<a href="/admin"${o.current === 'admin' ? ' aria-current="page"' : ''}>Admin</a>` : ''
      }</nav><span class="who" title="Signed in">${escapeHtml(o.user.name)}</span>${
        o.user.canSignOut ? '<button type="button" id="sign-out" class="quiet">Sign out</button>' : ''
      }`
    : ''
  const message = t.message ? `<p class="site-message" role="note">${escapeHtml(t.message)}</p>` : ''
  return `<header class="site"><a class="brand" href="/">${logo}<span class="site-name">${escapeHtml(t.siteName)}</span></a>${nav}</header>${message}`
}

export function renderPage(o: PageOptions): string {
  const favicon = o.theme.faviconUrl ?? '/static/app/icon.svg'
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(o.title)} · ${escapeHtml(o.theme.siteName)}</title>
<link rel="icon" href="${escapeHtml(favicon)}">
<link rel="stylesheet" href="/static/app/app.css">
${(o.styles ?? []).map((f) => `<link rel="stylesheet" href="/static/app/${f}">\n`).join('')}<link rel="stylesheet" href="/branding/theme.css?v=${encodeURIComponent(o.theme.version)}">
${o.script ? `<script type="module" src="/static/app/${o.script}"></script>\n` : ''}</head>
<body${o.bodyClass ? ` class="${o.bodyClass}"` : ''}>
<a class="skip" href="#main">Skip to content</a>
${header(o)}
<main id="main">${o.body}</main>
</body>
</html>
`
}

/** The response headers of every management page. */
export function pageHeaders(frameOrigin?: string): Record<string, string> {
  return {
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': csp(frameOrigin),
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'cache-control': 'no-store',
  }
}

export function sendPage(reply: FastifyReply, o: PageOptions, status = 200) {
  return reply.code(status).headers(pageHeaders(o.frameOrigin)).send(renderPage(o))
}

/**
 * A route-level Fastify error handler for browser pages: a refusal (4xx) becomes a themed
 * page with the same status and the error's public message when the browser asked for
 * HTML; anything else is rethrown to the app's JSON error handler.
 */
export function htmlErrors<Req extends { headers: Record<string, string | string[] | undefined> }>(
  theme: () => Promise<PageTheme>,
  user: (req: Req) => Promise<PageUser | undefined>,
) {
  return async (
    err: Error & { statusCode?: number; code?: string; validation?: unknown },
    req: Req,
    reply: FastifyReply,
  ) => {
    const status = err.statusCode ?? 500
    const accept = String(req.headers.accept ?? '')
    if (status < 400 || status >= 500 || typeof err.code !== 'string' || !accept.includes('text/html')) throw err
    // Not our management origin (the content origin, another Host): no page of ours, no theme.
    if (err.code === 'wrong_origin' || err.code === 'misdirected_request') throw err
    // An address whose id or query does not parse (a link cut short when copied): say so in
    // words, not with the schema's pattern.
    const malformed = err.validation !== undefined
    const heading = malformed
      ? 'Not a valid link'
      : status === 410
        ? 'No longer available'
        : status === 404
          ? 'Not found'
          : 'Not allowed'
    const message = malformed
      ? 'This address does not name an artifact or a share link: check that it was copied whole.'
      : err.message
    return sendPage(
      reply,
      {
        title: heading,
        theme: await theme(),
        user: await user(req).catch(() => undefined),
        body: `<section class="panel narrow"><h1>${heading}</h1><p class="error-text" data-code="${escapeHtml(err.code)}">${escapeHtml(message)}</p></section>`,
      },
      status,
    )
  }
}
