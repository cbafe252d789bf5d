/**
 * The web client, served by notify itself: a static page, one ES module and a stylesheet
 * from apps/notify/web/ (plain DOM, no build step), under a CSP without inline scripts.
 *   GET /                       the client
 *   GET /app.js, /app.css       its script and style
 *   GET /manifest.webmanifest   PWA manifest;  GET /icon.svg  its icon
 *   GET /sw.js                  the service worker (Web Push), scope /
 *   GET /push.js                the push notifications view
 *   GET /unread.js, /markdown.js, /channel-admin.js, /webhook-import.js   the client's other modules
 * (every file of apps/notify/web/ at its own name; index.html at /)
 * Any other address a browser navigates to gets the page of not-found.ts, under the same CSP.
 */
import { join } from 'node:path'
import type { HttpApp } from '@gatehouse/kit'
import { loadWebAssets, sendWebAsset } from '@gatehouse/kit/web-assets.ts'

const WEB = join(import.meta.dirname, '..', '..', 'web')

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

/** The client's pages' headers, its "not found" page's too (not-found.ts). */
export const PAGE_HEADERS: Record<string, string> = { 'content-security-policy': CSP, 'referrer-policy': 'no-referrer' }

export function webRoutes(app: HttpApp) {
  for (const [name, asset] of loadWebAssets(WEB)) {
    const path = name === 'index.html' ? '/' : `/${name}`
    app.get(path, { schema: { hide: true } }, async (req, reply) => {
      reply.headers(PAGE_HEADERS)
      return sendWebAsset(req, reply, asset)
    })
  }
}
