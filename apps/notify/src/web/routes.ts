/**
 * The web client, served by notify itself: a static page, one ES module and a stylesheet
 * from apps/notify/web/ (plain DOM, no build step), under a CSP without inline scripts.
 *   GET /                       the client
 *   GET /app.js, /app.css       its script and style
 *   GET /manifest.webmanifest   PWA manifest;  GET /icon.svg  its icon
 *   GET /sw.js                  the service worker (Web Push), scope /
 *   GET /push.js                the push notifications view
 *   GET /unread.js, /markdown.js, /channel-admin.js, /webhook-import.js   the client's other modules
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { HttpApp } from '@gatehouse/kit'

const WEB = join(import.meta.dirname, '..', '..', 'web')

const FILES: Record<string, { file: string; type: string }> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/app.css': { file: 'app.css', type: 'text/css; charset=utf-8' },
  // Issue #21 views: card actions and slash commands, desktop sign-in, the user panel.
  '/actions.js': { file: 'actions.js', type: 'text/javascript; charset=utf-8' },
  '/desktop.js': { file: 'desktop.js', type: 'text/javascript; charset=utf-8' },
  '/panel.js': { file: 'panel.js', type: 'text/javascript; charset=utf-8' },
  '/access.css': { file: 'access.css', type: 'text/css; charset=utf-8' },
  '/manifest.webmanifest': { file: 'manifest.webmanifest', type: 'application/manifest+json' },
  '/icon.svg': { file: 'icon.svg', type: 'image/svg+xml' },
  '/sw.js': { file: 'sw.js', type: 'text/javascript; charset=utf-8' },
  '/push.js': { file: 'push.js', type: 'text/javascript; charset=utf-8' },
  '/unread.js': { file: 'unread.js', type: 'text/javascript; charset=utf-8' },
  '/markdown.js': { file: 'markdown.js', type: 'text/javascript; charset=utf-8' },
  '/channel-admin.js': { file: 'channel-admin.js', type: 'text/javascript; charset=utf-8' },
  '/webhook-import.js': { file: 'webhook-import.js', type: 'text/javascript; charset=utf-8' },
}

/** Images are the only outside content a card may load (https, lazily); nothing else leaves the origin. */
export const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' https: http:",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ')

export function webRoutes(app: HttpApp) {
  for (const [path, { file, type }] of Object.entries(FILES)) {
    // Read once at startup: the files ship with the source.
    const body = readFileSync(join(WEB, file))
    app.get(path, { schema: { hide: true } }, async (_req, reply) =>
      reply
        .header('content-type', type)
        .header('content-security-policy', CSP)
        .header('x-content-type-options', 'nosniff')
        .header('referrer-policy', 'no-referrer')
        .send(body),
    )
  }
}
