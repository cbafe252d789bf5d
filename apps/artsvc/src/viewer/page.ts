/**
 * The viewer page on the management origin: the site's branded header, a bar with the
 * artifact's title, owner, version switcher and open-in-new-tab, and a frame onto the
 * content origin, sandboxed without allow-same-origin. The theme styles this chrome only:
 * nothing of it reaches the content origin.
 */
import type { FastifyReply } from 'fastify'
import { escapeHtml, type PageUser, sendPage } from '../ui/html.ts'
import type { PageTheme } from '../ui/theme.ts'

/** Sandbox flags of the iframe; `allow-same-origin` is never among them. */
export const IFRAME_SANDBOX = 'allow-scripts allow-forms allow-popups allow-modals allow-downloads'

export function encodePath(path: string): string {
  return path.split('/').map(encodeURIComponent).join('/')
}

export interface ViewerPage {
  title: string
  version: number
  frameUrl: string
  contentOrigin: string
  theme: PageTheme
  owner: string
  /** Signed-in viewer (the /a/ page); absent on share pages. */
  user?: PageUser | undefined
  /** The /a/ page: every version number, newest first, for the switcher. */
  switcher?: { artifact: string; versions: number[] } | undefined
  note?: string
}

function versionControl(page: ViewerPage): string {
  const s = page.switcher
  if (!s || s.versions.length < 2) return `<span class="version">version ${page.version}</span>`
  const options = s.versions
    .map((n) => `<option value="${n}"${n === page.version ? ' selected' : ''}>version ${n}</option>`)
    .join('')
  return `<form class="switcher" method="get" action="/a/${escapeHtml(s.artifact)}"><label for="version-select">Version</label><select id="version-select" name="version">${options}</select><button type="submit" class="quiet">Show</button></form>`
}

export function sendViewer(reply: FastifyReply, page: ViewerPage) {
  const bar = `<div class="viewer-bar"><h1 class="artifact-title">${escapeHtml(page.title)}</h1><span class="owner">by ${escapeHtml(page.owner)}</span>${versionControl(page)}${
    page.note ? `<span class="note">${escapeHtml(page.note)}</span>` : ''
  }<a class="button quiet" href="${escapeHtml(page.frameUrl)}" target="_blank" rel="noopener noreferrer">Open in new tab</a></div>`
  const frame = `<iframe id="artifact" src="${escapeHtml(page.frameUrl)}" sandbox="${IFRAME_SANDBOX}" referrerpolicy="no-referrer" allow="fullscreen" title="${escapeHtml(page.title)}"></iframe>`
  return sendPage(reply, {
    title: page.title,
    theme: page.theme,
    user: page.user,
    bodyClass: 'viewer',
    script: page.switcher ? 'viewer.js' : undefined,
    body: bar + frame,
    frameOrigin: page.contentOrigin,
  })
}
