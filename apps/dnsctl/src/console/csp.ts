/** The console's Content-Security-Policy, on its page, its files and its "not found" page. */

/** Nothing leaves the origin; charts are SVG built with DOM APIs, so no inline code of any kind. */
export const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ')

/** The headers of the console's pages, its "not found" page's too (not-found-page.ts). */
export const PAGE_HEADERS: Record<string, string> = { 'content-security-policy': CSP, 'referrer-policy': 'no-referrer' }
