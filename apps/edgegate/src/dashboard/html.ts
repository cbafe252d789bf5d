/** Escaped HTML templates for the server-rendered dashboard. */
import { EXPIRY_WARN_MS } from '@gatehouse/kit/certificate-expiry.ts'

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

export class Html {
  readonly text: string
  constructor(text: string) {
    this.text = text
  }
  toString() {
    return this.text
  }
}

export function escapeHtml(value: unknown): string {
  return String(value ?? '').replace(/[&<>"']/g, (c) => ESCAPES[c]!)
}

function render(value: unknown): string {
  if (value instanceof Html) return value.text
  if (Array.isArray(value)) return value.map(render).join('')
  return escapeHtml(value)
}

/** Tagged template: interpolations are escaped unless they are `Html` themselves. */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0]!
  values.forEach((v, i) => {
    out += render(v) + strings[i + 1]!
  })
  return new Html(out)
}

/** A time for people: `2026-11-25 08:44:50Z` (UTC, seconds), the full RFC 3339 value as `datetime` and tooltip. */
export function time(value: string | number | null | undefined): Html {
  if (value === null || value === undefined) return html``
  const iso = typeof value === 'number' ? new Date(value).toISOString() : value
  const short = iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z')
  return html`<time datetime="${iso}" title="${iso}">${short}</time>`
}

/**
 * What a view shows in place of a table with no rows: a row of headings over nothing says neither
 * what would be listed nor how it gets there. `view` names it for the stylesheet and the tests.
 */
export function emptyState(view: string, title: string, body: Html): Html {
  return html`<section class="empty-state" data-empty="${view}" aria-labelledby="empty-${view}">
<h2 id="empty-${view}">${title}</h2>
${body}
</section>`
}

/** The dashboard's views, in menu order: path and name. */
export const VIEWS = [
  ['/', 'Overview'],
  ['/decisions', 'Decisions'],
  ['/web', 'Web candidates'],
  ['/signals', 'Signals'],
  ['/pairs', 'Pairings'],
  ['/smtp', 'SMTP reports'],
  ['/audit', 'Audit log'],
] as const

/** Who is signed in to a view, and when the token behind the session expires (null: never). */
export interface SignedIn {
  name: string
  tokenExpiresMs: number | null
  /** Signed in with a session cookie (not a bearer token): the session ends with the token. */
  session: boolean
}

/**
 * Within the fortnight the health pass warns about, the administrator reads it on every view:
 * the session ends with the token, and whoever holds it is often the last to hear of an alert.
 */
function tokenNotice(admin: SignedIn, now: number): Html {
  if (admin.tokenExpiresMs === null || admin.tokenExpiresMs - now >= EXPIRY_WARN_MS) return html``
  const days = Math.floor((admin.tokenExpiresMs - now) / 86_400_000)
  const left = days === 0 ? 'less than a day' : `${days} day${days === 1 ? '' : 's'}`
  return html`<p id="token-notice" class="notice" role="status">Your administrator token expires on ${time(
    admin.tokenExpiresMs,
  )} (${left} left)${admin.session ? ', and this session with it' : ''}. An operator issues a new one with <code>edgegate admin rotate-token ${admin.name}</code>.</p>`
}

/** The menu and signed-in bar of every administrator view; `current` is the active path. */
export function chrome(admin: SignedIn, current: string, body: Html): Html {
  return html`<a class="skip" href="#main">Skip to content</a>
<header><strong class="brand">edgegate</strong>
<nav aria-label="Views"><ul>${VIEWS.map(
    ([path, name]) => html`<li><a href="${path}"${path === current ? html` aria-current="page"` : ''}>${name}</a></li>`,
  )}</ul></nav>
<span class="who">Signed in as <strong>${admin.name}</strong> <button id="logout" type="button">Sign out</button></span></header>
<main id="main">
${tokenNotice(admin, Date.now())}<p id="error" role="alert" hidden></p>
${body}
</main>`
}

/**
 * The page a browser gets at an address no route takes (the kit's `notFoundPage`), in the
 * dashboard's shell: its stylesheet, header and a way home. It names no path: the address
 * is in the browser's bar already, and echoing it would put a stranger's text on our page.
 * The gates' and the administration API (`/v1/`, `/api/`) keep the kit's coded JSON.
 */
export function notFoundPage(path: string): string | undefined {
  if (path.startsWith('/api/') || path.startsWith('/v1/')) return undefined
  return layout(
    'edgegate: page not found',
    html`<a class="skip" href="#main">Skip to content</a>
<header><a class="brand" href="/">edgegate</a></header>
<main id="main">
<h1>Page not found</h1>
<p>There is no dashboard page at this address. It may have been mistyped, or the link that led here is out of date.</p>
<p><a href="/" id="home">Go to the overview</a></p>
</main>`,
  )
}

export function layout(title: string, body: Html): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>${title}</title>
<link rel="stylesheet" href="/dashboard.css">
<script src="/dashboard.js" defer></script>
</head>
<body>
${body}
</body>
</html>
`.text
}
