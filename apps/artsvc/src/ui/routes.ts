/**
 * The browser UI on the management origin (plain ES modules from apps/artsvc/web/, no build
 * step; the pages are server-rendered shells so the theme, favicon and header arrive with
 * the HTML and no inline script is ever needed):
 *   GET /                       the library (a sign-in page when signed out)
 *   GET /admin                  administrators: artifacts, shares, appearance editor, themes
 *   GET /static/app/{file}      the client's modules, stylesheet and icon
 *   GET /branding/theme.css     the active theme as CSS custom properties (anyone)
 */
import { join } from 'node:path'
import type { HttpApp } from '@gatehouse/kit'
import { loadWebAssets, sendWebAsset } from '@gatehouse/kit/web-assets.ts'
import type { FastifyReply } from 'fastify'
import { Type } from 'typebox'
import type { Principal } from '../auth/principal.ts'
import type { AppContext } from '../context.ts'
import { escapeHtml, type PageUser, sendPage } from './html.ts'
import { pageTheme, themeCss } from './theme.ts'

const WEB = join(import.meta.dirname, '..', '..', 'web')
const FileParams = Type.Object({ file: Type.String({ pattern: '^[a-z0-9-]+\\.(js|css|svg)$' }) })
const AnyQuery = Type.Object({ v: Type.Optional(Type.String({ maxLength: 200 })) }, { additionalProperties: false })

export function pageUser(p: Principal): PageUser {
  return {
    name: p.user.display_name ?? p.user.email ?? p.user.oidc_subject,
    isAdmin: p.isAdmin,
    canSignOut: p.via === 'session',
  }
}

export function uiRoutes(app: HttpApp, ctx: AppContext) {
  const files = loadWebAssets(WEB)
  const loginUrl = (back: string) => `/api/v1/auth/login?return_to=${encodeURIComponent(back)}`

  /** A signed-out visitor: a sign-in page (oidc) or a 401 page (edge mode, the proxy signs people in). */
  const signedOut = async (reply: FastifyReply, back: string) => {
    const theme = await pageTheme(ctx)
    const oidc = ctx.config.authMode === 'oidc'
    return sendPage(
      reply,
      {
        title: 'Sign in',
        theme,
        body: `<section class="panel narrow"><h1>Sign in</h1><p>Published artifacts and their sharing controls are for signed-in accounts. A share link you were given opens without an account.</p>${
          oidc
            ? `<p><a class="button primary" href="${escapeHtml(loginUrl(back))}">Sign in</a></p>`
            : '<p>Sign in through your access proxy, then reload this page.</p>'
        }</section>`,
      },
      oidc ? 200 : 401,
    )
  }

  app.get('/', { schema: { querystring: AnyQuery, hide: true } }, async (req, reply) => {
    const principal = await ctx.auth.principal(req)
    if (!principal) return signedOut(reply, '/')
    return sendPage(reply, {
      title: 'Library',
      theme: await pageTheme(ctx),
      user: pageUser(principal),
      current: 'library',
      script: 'library.js',
      body: '<div id="app" class="library"><p class="loading">Loading your library…</p></div>',
    })
  })

  app.get('/admin', { schema: { hide: true } }, async (req, reply) => {
    const principal = await ctx.auth.principal(req)
    if (!principal) {
      if (ctx.config.authMode === 'oidc') return reply.redirect(loginUrl('/admin'), 302)
      return signedOut(reply, '/admin')
    }
    const theme = await pageTheme(ctx)
    if (!principal.isAdmin) {
      return sendPage(
        reply,
        {
          title: 'Administrators only',
          theme,
          user: pageUser(principal),
          body: '<section class="panel narrow"><h1>Administrators only</h1><p>This page is for the administrators of this instance. <a href="/">Back to your library</a>.</p></section>',
        },
        403,
      )
    }
    return sendPage(reply, {
      title: 'Admin',
      theme,
      user: pageUser(principal),
      current: 'admin',
      script: 'admin.js',
      styles: ['admin.css'],
      body: '<div id="app" class="admin"><p class="loading">Loading…</p></div>',
    })
  })

  app.get('/static/app/:file', { schema: { params: FileParams, hide: true } }, async (req, reply) => {
    const file = files.get(req.params.file)
    if (!file) return reply.code(404).header('content-type', 'text/plain').send('not found')
    return sendWebAsset(req, reply, file)
  })

  // Public: share viewers without an account see the theme too. Only colours are in it.
  app.get('/branding/theme.css', { schema: { querystring: AnyQuery, hide: true } }, async (_req, reply) => {
    const theme = await pageTheme(ctx)
    return reply
      .header('content-type', 'text/css; charset=utf-8')
      .header('x-content-type-options', 'nosniff')
      .header('cache-control', 'no-cache')
      .send(themeCss(theme.palette))
  })
}
