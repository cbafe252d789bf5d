/** The viewer page on the management origin: a frame onto the content origin, sandboxed without allow-same-origin. */
import type { FastifyReply } from 'fastify'

/** Sandbox flags of the iframe; `allow-same-origin` is never among them. */
export const IFRAME_SANDBOX = 'allow-scripts allow-forms allow-popups allow-modals allow-downloads'

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!)

export function encodePath(path: string): string {
  return path.split('/').map(encodeURIComponent).join('/')
}

export interface ViewerPage {
  title: string
  version: number
  frameUrl: string
  contentOrigin: string
  note?: string
}

export function sendViewer(reply: FastifyReply, page: ViewerPage) {
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(page.title)} · artsvc</title>
<link rel="stylesheet" href="/static/viewer.css">
</head>
<body>
<header><span class="title">${escapeHtml(page.title)}</span><span class="version">version ${page.version}</span>${page.note ? `<span class="note">${escapeHtml(page.note)}</span>` : ''}</header>
<iframe id="artifact" src="${escapeHtml(page.frameUrl)}" sandbox="${IFRAME_SANDBOX}" referrerpolicy="no-referrer" allow="fullscreen" title="${escapeHtml(page.title)}"></iframe>
</body>
</html>
`
  return reply
    .code(200)
    .header('content-type', 'text/html; charset=utf-8')
    .header(
      'content-security-policy',
      `default-src 'none'; style-src 'self'; img-src 'self' data:; frame-src ${page.contentOrigin}; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
    )
    .header('x-frame-options', 'DENY')
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('cache-control', 'no-store')
    .send(html)
}

export const VIEWER_CSS = `html,body{margin:0;height:100%;font:14px system-ui,sans-serif;background:#f4f4f5;color:#18181b}
body{display:flex;flex-direction:column}
header{display:flex;gap:1em;align-items:baseline;padding:.5em 1em;border-bottom:1px solid #d4d4d8;background:#fff}
header .title{font-weight:600}header .version,header .note{color:#71717a}
iframe{flex:1;border:0;width:100%;background:#fff}
`
