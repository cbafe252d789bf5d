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

export function webRoutes(app: HttpApp) {
  // Pages not answered by a route below (the kit's not-found page) get the same policy.
  app.addHook('onSend', async (_req, reply) => {
    const type = reply.getHeader('content-type')
    if (typeof type === 'string' && type.startsWith('text/html') && !reply.hasHeader('content-security-policy')) {
      reply.header('content-security-policy', CSP).header('referrer-policy', 'no-referrer')
    }
  })
  for (const [name, asset] of loadWebAssets(WEB)) {
    const path = name === 'index.html' ? '/' : `/${name}`
    app.get(path, { schema: { hide: true } }, async (req, reply) => {
      reply.header('content-security-policy', CSP).header('referrer-policy', 'no-referrer')
      return sendWebAsset(req, reply, asset)
    })
  }
}
