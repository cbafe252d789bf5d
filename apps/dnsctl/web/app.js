// The dnsctl web console: plain ES modules, no build step, under a CSP without inline scripts.
// Sign-in: `dnsctl console` prints a link whose fragment (#code=...) holds a one-time code; this
// page trades it for an HttpOnly session cookie and a CSRF token, then removes it from the address.
// Views live in views/*.js; each exports render(main, params) and calls the API only.
import { api, errorBox, h, hooks, session } from './lib.js'

const main = document.getElementById('main')
const nav = document.getElementById('nav')
const who = document.getElementById('who')

const VIEWS = [
  { path: 'zones', label: 'Zones', load: () => import('./views/zones.js') },
  { path: 'blocklists', label: 'Blocklists', load: () => import('./views/blocklists.js') },
  { path: 'metrics', label: 'Metrics', load: () => import('./views/metrics.js') },
  { path: 'analytics', label: 'Queries', load: () => import('./views/analytics.js') },
  { path: 'ha', label: 'HA', load: () => import('./views/ha.js') },
  { path: 'provider', label: 'Provider', load: () => import('./views/provider.js') },
]
// Routes below a view: #/zones/<zone> (RRsets) and #/zones/<zone>/history.
const ZONE_VIEWS = {
  '': () => import('./views/rrsets.js'),
  history: () => import('./views/history.js'),
}

function signInPage(message) {
  nav.replaceChildren()
  who.replaceChildren()
  const error = errorBox()
  if (message) error.show({ message })
  main.replaceChildren(
    h(
      'section',
      { class: 'signin' },
      h('h1', {}, 'Sign in to the dnsctl console'),
      h('p', {}, 'On the DNS server, run:'),
      h('pre', {}, 'dnsctl console'),
      h('p', {}, 'and open the sign-in link it prints (it works once, for a few minutes).'),
      error,
    ),
  )
}

async function signInWithCode(code) {
  // The code leaves the address bar (and the history) before anything else happens.
  history.replaceState(null, '', `${location.pathname}#/zones`)
  const res = await fetch('/console/session', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    credentials: 'same-origin',
    body: JSON.stringify({ code }),
  })
  const data = await res.json().catch(() => ({}))
  if (!res.ok) throw new Error(data.error?.message ?? `HTTP ${res.status}`)
  return data
}

async function currentSession() {
  const res = await fetch('/console/session', { credentials: 'same-origin' })
  return res.ok ? res.json() : undefined
}

function renderNav(active) {
  nav.replaceChildren(
    h(
      'ul',
      {},
      VIEWS.map((v) =>
        h('li', {}, h('a', { href: `#/${v.path}`, 'aria-current': v.path === active ? 'page' : undefined }, v.label)),
      ),
    ),
  )
}

function renderWho() {
  const out = h('button', { type: 'button', class: 'link' }, 'Sign out')
  out.addEventListener('click', async () => {
    await api('DELETE', '/console/session').catch(() => {})
    session.csrf = ''
    signInPage('Signed out.')
  })
  who.replaceChildren(h('span', { class: 'muted' }, session.name), ' ', out)
}

let routing = 0
async function route() {
  if (!session.csrf) return
  const ticket = ++routing
  const parts = location.hash
    .replace(/^#\/?/, '')
    .split('/')
    .map((p) => decodeURIComponent(p))
  const top = VIEWS.find((v) => v.path === parts[0]) ?? VIEWS[0]
  renderNav(top.path)
  let load = top.load
  let params = {}
  if (top.path === 'zones' && parts[1]) {
    load = ZONE_VIEWS[parts[2] ?? ''] ?? ZONE_VIEWS['']
    params = { zone: parts[1] }
  }
  const view = await load()
  if (ticket !== routing) return
  const container = h('div', { class: 'view' })
  main.replaceChildren(container)
  try {
    await view.render(container, params)
  } catch (err) {
    const box = errorBox()
    box.show(err)
    container.append(box)
  }
  main.focus({ preventScroll: true })
}

// The skip link's #main would be read as a route (hashchange) and leave the view for the zone
// list; it moves the focus to the content instead and keeps the address as it is.
document.querySelector('a.skip')?.addEventListener('click', (event) => {
  event.preventDefault()
  main.focus()
})

async function boot() {
  hooks.signedOut = () => {
    session.csrf = ''
    signInPage('Your console session ended; run dnsctl console for a new sign-in link.')
  }
  const code = /^#code=([A-Za-z0-9_-]{1,100})$/.exec(location.hash)?.[1]
  let s
  try {
    s = code ? await signInWithCode(code) : await currentSession()
  } catch (err) {
    return signInPage(err.message)
  }
  if (!s) return signInPage()
  session.csrf = s.csrf_token
  session.name = s.name
  renderWho()
  window.addEventListener('hashchange', route)
  if (!location.hash || location.hash === '#') history.replaceState(null, '', '#/zones')
  await route()
}

boot()
