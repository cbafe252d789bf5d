// The notify web client: plain DOM, no build step. Every piece of text from a payload is
// set with textContent (the h() helper never touches innerHTML), links get
// rel="noopener noreferrer", and the page runs under a CSP without inline scripts.
// Views beyond the inbox live in their own modules, which import h/api/toast from here.

import { actionButton, actionHistory, commandBar, invocationText } from './actions.js'
import { channelAdminView, managesChannels } from './channel-admin.js'
import { DESKTOP_ROUTE, providerButton, renderDesktopApproval } from './desktop.js'
import { markdown, plainText, safeHref as safeUrl } from './markdown.js'
import { openPanel } from './panel.js'
import { pushView, revokeThisBrowser } from './push.js'
import { refreshUnread, scheduleUnread, unreadBadge } from './unread.js'
import { webhookImportSection } from './webhook-import.js'

const app = document.getElementById('app')
const state = {
  me: undefined,
  channels: [],
  channel: undefined, // undefined: every channel
  unreadOnly: true,
  q: '',
  lifecycle: '',
  severity: '',
  items: [],
  next: null,
  selected: -1,
  stream: undefined,
  arrived: [], // live notifications received while the inbox loads
  // The view shown instead of the inbox: 'admin', 'users', 'push', 'channels', 'desktop' (a
  // desktop sign-in approval); undefined: the inbox.
  view: undefined,
  focus: undefined, // a notification id to select once the inbox loads (opened from a push)
}

/** An element with attributes and children; strings become text nodes, never HTML. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false || v === null) continue
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v)
    else if (k === 'style') for (const [p, val] of Object.entries(v)) el.style.setProperty(p, val)
    else el.setAttribute(k, v === true ? '' : String(v))
  }
  for (const c of children.flat(Number.POSITIVE_INFINITY))
    if (c !== undefined && c !== null && c !== false) el.append(c instanceof Node ? c : String(c))
  return el
}

export async function api(method, path, body, headers = {}) {
  const res = await fetch(path, {
    method,
    headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const data = res.status === 204 ? {} : await res.json().catch(() => ({}))
  if (!res.ok)
    throw Object.assign(new Error(data.error?.message ?? `HTTP ${res.status}`), {
      code: data.error?.code,
      status: res.status,
    })
  return data
}

function relative(iso) {
  const s = Math.round((Date.now() - Date.parse(iso)) / 1000)
  if (s < 60) return 'just now'
  if (s < 3600) return `${Math.floor(s / 60)} min ago`
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`
  return `${Math.floor(s / 86400)} d ago`
}

function link(label, url) {
  const href = safeUrl(url)
  return href ? h('a', { href, target: '_blank', rel: 'noopener noreferrer' }, label) : h('span', {}, label)
}

// ---- sign-in ---------------------------------------------------------------------------

function signIn(message) {
  const error = h('p', { class: 'error', role: 'alert' }, message ?? '')
  const form = h(
    'form',
    {
      class: 'signin',
      onsubmit: async (e) => {
        e.preventDefault()
        const f = new FormData(form)
        try {
          await api('POST', '/api/v1/auth/login', { username: f.get('username'), password: f.get('password') })
          await start()
        } catch (err) {
          error.textContent = err.message
        }
      },
    },
    h('h1', {}, 'Sign in to Notify'),
    h('label', {}, 'Username', h('input', { name: 'username', autocomplete: 'username', required: true })),
    h(
      'label',
      {},
      'Password',
      h('input', { name: 'password', type: 'password', autocomplete: 'current-password', required: true }),
    ),
    h('button', { class: 'primary', type: 'submit' }, 'Sign in'),
    error,
  )
  app.replaceChildren(form)
  form.querySelector('input').focus()
  void providerButton(ui).then((b) => b && form.querySelector('button.primary').after(b))
}

/** What the issue #21 modules (actions.js, desktop.js, panel.js) use of this one. */
const ui = {
  h,
  api,
  toast,
  relative,
  app,
  state,
  layout: (content) => app.replaceChildren(h('div', { class: 'layout' }, navigation(), content)),
}

// ---- data ------------------------------------------------------------------------------

async function loadChannels() {
  state.channels = (await api('GET', '/api/v1/channels')).channels
}

function query(before) {
  const p = new URLSearchParams()
  if (state.q) p.set('q', state.q)
  if (state.channel) p.set('channel', state.channel)
  if (state.lifecycle) p.set('state', state.lifecycle)
  if (state.severity) p.set('severity', state.severity)
  if (state.unreadOnly && state.lifecycle !== 'archived') p.set('unread', 'true')
  if (before) p.set('before', before)
  return `/api/v1/notifications?${p}`
}

let inboxLoads = 0
let inboxLoading = false

/**
 * (Re)load the first page. Only the newest load applies its answer (an older one may
 * finish later), and notifications that arrived live while it ran are kept: the query
 * may have run before they were committed.
 */
async function loadInbox() {
  const load = ++inboxLoads
  state.arrived = []
  inboxLoading = true
  let r
  try {
    r = await api('GET', query())
  } finally {
    if (load === inboxLoads) inboxLoading = false
  }
  if (load !== inboxLoads) return
  const fresh = state.arrived.filter((n) => matches(n) && !r.notifications.some((i) => i.id === n.id))
  state.items = [...fresh.reverse(), ...r.notifications]
  state.arrived = []
  state.next = r.next_cursor
  state.selected = Math.min(state.selected, state.items.length - 1)
  if (state.focus) await focusItem()
  render()
  document.querySelector('.card.selected')?.scrollIntoView({ block: 'nearest' })
}

/** Select the item a push notification opened (`/?notification=ID`), loading it if not listed. */
async function focusItem() {
  const id = state.focus
  state.focus = undefined
  let item = state.items.find((i) => i.id === id)
  if (!item) {
    try {
      item = (await api('GET', `/api/v1/notifications/${id}`)).notification
      state.items.unshift(item)
    } catch {
      toast('That notification is no longer available.')
      return
    }
  }
  state.selected = state.items.indexOf(item)
}

async function loadMore() {
  const r = await api('GET', query(state.next))
  state.items.push(...r.notifications)
  state.next = r.next_cursor
  render()
}

function roleOf(channel) {
  return state.channels.find((c) => c.name === channel)?.role
}

function canOperate(channel) {
  const role = roleOf(channel)
  return state.me.admin || role === 'operator' || role === 'channel_admin'
}

/** Whether a live notification belongs in the current view (search results reload instead). */
function matches(n) {
  if (state.q || state.lifecycle === 'archived') return false
  if (state.channel && n.channel !== state.channel) return false
  if (state.lifecycle && n.state !== state.lifecycle) return false
  if (state.severity && n.severity !== state.severity) return false
  return true
}

function connect() {
  state.stream?.close()
  const es = new EventSource('/api/v1/stream')
  state.stream = es
  es.addEventListener('ready', () => void loadInbox())
  es.addEventListener('notification', (e) => {
    const n = JSON.parse(e.data).notification
    if (inboxLoading) state.arrived.push(n)
    if (matches(n) && !state.items.some((i) => i.id === n.id)) {
      state.items.unshift(n)
      if (state.selected >= 0) state.selected++
      render()
    }
  })
  es.addEventListener('lifecycle', (e) => {
    const d = JSON.parse(e.data)
    const item = state.items.find((i) => i.id === d.id)
    if (item) {
      item.state = d.state
      render()
    }
  })
  es.addEventListener('read', (e) => {
    const d = JSON.parse(e.data)
    for (const item of state.items) {
      if (d.notification_ids?.includes(item.id)) item.read = true
      for (const c of d.channels ?? []) if (c.channel === item.channel && item.id <= c.last_read_id) item.read = true
    }
    if (state.unreadOnly) state.items = state.items.filter((i) => !i.read)
    render()
  })
  es.addEventListener('archive', () => void loadInbox())
  // Anything that can change a count refreshes the navigation's unread badges.
  for (const type of ['ready', 'notification', 'read', 'archive', 'channel', 'membership'])
    es.addEventListener(type, scheduleUnread)
  for (const type of ['channel', 'membership'])
    es.addEventListener(type, async () => {
      await loadChannels()
      render()
    })
}

// ---- actions ---------------------------------------------------------------------------

async function act(item, action) {
  try {
    const r = await api('POST', `/api/v1/notifications/${item.id}/${action}`)
    Object.assign(item, r.notification)
    if (action === 'archive' || action === 'restore' || (action === 'read' && state.unreadOnly))
      state.items = state.items.filter((i) => i !== item)
    render()
  } catch (err) {
    toast(err.message)
  }
}

export function toast(text) {
  const t = h('p', { class: 'error', role: 'alert' }, text)
  const toolbar = document.querySelector('.toolbar')
  if (toolbar) toolbar.after(t)
  else document.querySelector('.content')?.prepend(t)
  setTimeout(() => t.remove(), 5000)
}

async function markChannelRead() {
  if (state.channel) await api('POST', `/api/v1/channels/${encodeURIComponent(state.channel)}/read`)
  else await api('POST', '/api/v1/notifications/read-all')
  await loadInbox()
}

// ---- administration (administrators) -----------------------------------------------------

/** A one-time secret: shown once, with a copy button; never stored by the client. */
function secretOnce(label, value) {
  const input = h('input', { readonly: true, value, 'aria-label': label, size: 48 })
  return h(
    'div',
    { class: 'secret', role: 'status' },
    h('p', {}, `${label} (shown once; copy it now):`),
    input,
    h(
      'button',
      {
        onclick: async () => {
          input.select()
          await navigator.clipboard?.writeText(value).catch(() => undefined)
        },
      },
      'Copy',
    ),
  )
}

async function renderAdmin(section) {
  const hooks = (await api('GET', '/api/v1/webhooks')).webhooks
  const out = h('div', { class: 'admin-result' })
  const channelOptions = () => state.channels.map((c) => h('option', { value: c.name }, c.name))
  const fail = (err) => out.replaceChildren(h('p', { class: 'error', role: 'alert' }, err.message))
  const origin = location.origin

  const createChannel = h(
    'form',
    {
      class: 'admin-form',
      onsubmit: async (e) => {
        e.preventDefault()
        const f = new FormData(e.target)
        try {
          const r = await api('POST', '/api/v1/channels', {
            name: f.get('name'),
            display_name: f.get('display_name') || undefined,
            description: f.get('description') || undefined,
            accent_color: f.get('accent_color'),
            visibility: f.get('visibility'),
          })
          await loadChannels()
          await renderAdmin(h('h3', {}, `Channel ${r.channel.name} created`))
          document
            .querySelector('.admin-result')
            ?.replaceChildren(secretOnce('Publishing URL', origin + r.publishing.path))
        } catch (err) {
          fail(err)
        }
      },
    },
    h('h3', {}, 'New channel'),
    h(
      'label',
      {},
      'URL name (cannot change later)',
      h('input', { name: 'name', required: true, pattern: '[a-z0-9][a-z0-9_\\-]{0,62}' }),
    ),
    h('label', {}, 'Display name', h('input', { name: 'display_name' })),
    h('label', {}, 'Description', h('input', { name: 'description' })),
    h('label', {}, 'Accent colour', h('input', { name: 'accent_color', type: 'color', value: '#4f6bed' })),
    h(
      'label',
      {},
      'Visibility',
      h(
        'select',
        { name: 'visibility' },
        h('option', { value: 'public' }, 'public'),
        h('option', { value: 'private' }, 'private'),
      ),
    ),
    h('button', { class: 'primary', type: 'submit' }, 'Create channel'),
  )

  const members = h(
    'form',
    {
      class: 'admin-form',
      onsubmit: async (e) => {
        e.preventDefault()
        const f = new FormData(e.target)
        try {
          await api(
            'PUT',
            `/api/v1/channels/${encodeURIComponent(f.get('channel'))}/members/${encodeURIComponent(f.get('username'))}`,
            { role: f.get('role') },
          )
          out.replaceChildren(
            h('p', { role: 'status' }, `${f.get('username')} is ${f.get('role')} of ${f.get('channel')}`),
          )
        } catch (err) {
          fail(err)
        }
      },
    },
    h('h3', {}, 'Channel member'),
    h('label', {}, 'Channel', h('select', { name: 'channel' }, channelOptions())),
    h('label', {}, 'Username', h('input', { name: 'username', required: true })),
    h(
      'label',
      {},
      'Role',
      h(
        'select',
        { name: 'role' },
        ['viewer', 'operator', 'channel_admin'].map((r) => h('option', { value: r }, r)),
      ),
    ),
    h('button', { class: 'primary', type: 'submit' }, 'Set role'),
  )

  const createHook = h(
    'form',
    {
      class: 'admin-form',
      onsubmit: async (e) => {
        e.preventDefault()
        const f = new FormData(e.target)
        try {
          const r = await api('POST', '/api/v1/webhooks', {
            channel: f.get('channel'),
            channel_locked: f.get('locked') === 'on',
          })
          await renderAdmin()
          document.querySelector('.admin-result')?.replaceChildren(secretOnce('Webhook URL', origin + r.webhook.path))
        } catch (err) {
          fail(err)
        }
      },
    },
    h('h3', {}, 'New webhook'),
    h('label', {}, 'Channel', h('select', { name: 'channel' }, channelOptions())),
    h(
      'label',
      { class: 'check' },
      h('input', { type: 'checkbox', name: 'locked' }),
      'Lock to this channel (ignore payload channel)',
    ),
    h('button', { class: 'primary', type: 'submit' }, 'Create webhook'),
  )

  const hookRows = h(
    'table',
    { class: 'hooks' },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ['Channel', 'Locked', 'Kind', 'Created', 'Status', ''].map((t) => h('th', {}, t)),
      ),
    ),
    h(
      'tbody',
      {},
      hooks.map((w) =>
        h(
          'tr',
          {},
          h('td', {}, w.channel),
          h('td', {}, w.channel_locked ? 'yes' : 'no'),
          h('td', {}, w.kind),
          h('td', {}, h('time', { datetime: w.created_at, title: w.created_at }, relative(w.created_at))),
          h('td', {}, w.active ? 'active' : 'revoked'),
          h(
            'td',
            {},
            w.active
              ? [
                  h(
                    'button',
                    {
                      onclick: async () => {
                        try {
                          const r = await api('POST', `/api/v1/webhooks/${encodeURIComponent(w.id)}/new-url`)
                          await renderAdmin()
                          document
                            .querySelector('.admin-result')
                            ?.replaceChildren(secretOnce('Webhook URL', origin + r.webhook.path))
                        } catch (err) {
                          fail(err)
                        }
                      },
                    },
                    'New URL',
                  ),
                  ' ',
                  h(
                    'button',
                    {
                      onclick: async () => {
                        if (!confirm(`Revoke this ${w.channel} webhook? Deliveries stop at once.`)) return
                        try {
                          await api('POST', `/api/v1/webhooks/${encodeURIComponent(w.id)}/revoke`)
                          await renderAdmin()
                        } catch (err) {
                          fail(err)
                        }
                      },
                    },
                    'Revoke',
                  ),
                ]
              : '',
          ),
        ),
      ),
    ),
  )

  const content = h(
    'section',
    { class: 'content admin' },
    h('h2', {}, 'Administration'),
    section ?? '',
    out,
    h('div', { class: 'admin-grid' }, createChannel, members, createHook),
    h('h3', {}, 'Webhooks'),
    hookRows,
    webhookImportSection(),
  )
  app.replaceChildren(h('div', { class: 'layout' }, navigation(), content))
}

// ---- rendering -------------------------------------------------------------------------

/** Card rows: primary text, optional secondary, tags as badges, strong emphasis. */
function rowList(rows) {
  return h(
    'ul',
    { class: 'rows' },
    rows.map((r) =>
      h(
        'li',
        { class: r.emphasis === 'strong' ? 'strong' : undefined },
        r.primary,
        r.secondary ? ` — ${r.secondary}` : '',
        (r.tags ?? []).map((t) => h('span', { class: 'badge' }, t)),
      ),
    ),
  )
}

function cardContent(n) {
  const c = n.content ?? {}
  const out = []
  if (n.kind === 'card') {
    if (c.summary) out.push(h('p', { class: 'body' }, c.summary))
    if (c.badges?.length)
      out.push(
        h(
          'p',
          {},
          c.badges.map((b) => h('span', { class: `badge tone-${b.tone ?? 'neutral'}` }, b.text)),
        ),
      )
    if (c.metrics?.length)
      out.push(
        h(
          'div',
          { class: 'metrics' },
          c.metrics.map((m) => h('div', {}, h('span', { class: 'muted' }, m.label), h('b', {}, String(m.value)))),
        ),
      )
    if (c.rows?.length) out.push(rowList(c.rows))
    if (c.fields?.length)
      out.push(
        h(
          'dl',
          { class: 'fields' },
          c.fields.flatMap((f) => [h('dt', {}, f.label), h('dd', {}, f.value)]),
        ),
      )
    for (const img of c.images ?? []) {
      const src = safeUrl(img.url)
      if (src) out.push(h('img', { src, alt: img.alt, loading: 'lazy', referrerpolicy: 'no-referrer' }))
    }
    if (c.links?.length)
      out.push(
        h(
          'p',
          {},
          c.links.map((l) => [link(l.label, l.url), ' ']),
        ),
      )
    // Row views: a titled list of rows, from one source or across several (type as a class).
    for (const v of c.views ?? [])
      out.push(
        h(
          'section',
          { class: `view view-${v.type}`, 'aria-label': v.title },
          h(
            'h3',
            {},
            v.title,
            ' ',
            h('span', { class: 'muted' }, v.type === 'cross-list' ? '(across sources)' : '(source)'),
          ),
          rowList(v.rows),
        ),
      )
    if (c.actions?.length)
      out.push(
        h(
          'p',
          {},
          c.actions.map((a, i) =>
            a.type === 'link' ? link(a.label, a.url) : actionButton(ui, n, a, i, canOperate(n.channel)),
          ),
        ),
      )
  } else {
    // Compatibility text is Mattermost-style markdown (a safe subset, built with DOM APIs).
    if (n.body)
      out.push(n.kind === 'compat' ? h('div', { class: 'md' }, markdown(n.body)) : h('p', { class: 'body' }, n.body))
    for (const a of c.attachments ?? []) {
      out.push(
        h(
          'div',
          { class: 'attachment' },
          a.title ? h('p', { class: 'strong' }, a.title_link ? link(a.title, a.title_link) : a.title) : '',
          a.pretext ? h('div', { class: 'md' }, markdown(a.pretext)) : '',
          a.text ? h('div', { class: 'md' }, markdown(a.text)) : '',
          a.fields?.length
            ? h(
                'dl',
                { class: 'fields' },
                a.fields.flatMap((f) => [h('dt', {}, f.title ?? ''), h('dd', {}, f.value ?? '')]),
              )
            : '',
        ),
      )
    }
  }
  return out
}

function card(n, index) {
  const operate = canOperate(n.channel)
  const archivedView = state.lifecycle === 'archived'
  return h(
    'li',
    {
      class: `card sev-${n.severity}${n.read ? '' : ' unread'}${index === state.selected ? ' selected' : ''}`,
      'data-id': n.id,
      tabindex: '-1',
    },
    h(
      'header',
      {},
      // A compatibility message's title is its raw first line: show it without markdown markers.
      h(
        'h2',
        {},
        (n.kind === 'compat' && n.body ? plainText(n.body.split('\n', 1)[0]) : n.title || n.body).slice(0, 120),
      ),
      h('span', { class: `badge sev-${n.severity}` }, n.severity),
      h('span', { class: 'badge state' }, n.state),
    ),
    h(
      'div',
      { class: 'meta' },
      h('span', {}, `#${n.channel}`),
      n.source ? h('span', {}, n.source) : '',
      n.username ? h('span', {}, n.username) : '',
      h('time', { datetime: n.created_at, title: n.created_at }, relative(n.created_at)),
    ),
    cardContent(n),
    h(
      'div',
      { class: 'actions' },
      n.read ? '' : h('button', { onclick: () => act(n, 'read') }, 'Mark read'),
      operate && (n.state === 'received' || n.state === 'firing')
        ? h('button', { onclick: () => act(n, 'acknowledge') }, 'Acknowledge')
        : '',
      operate && n.state !== 'resolved' ? h('button', { onclick: () => act(n, 'resolve') }, 'Resolve') : '',
      archivedView
        ? h('button', { onclick: () => act(n, 'restore') }, 'Restore')
        : h('button', { onclick: () => act(n, 'archive') }, 'Archive'),
      h('button', { onclick: (e) => showHistory(n, e.target.closest('li')) }, 'History'),
    ),
  )
}

/**
 * The item's immutable activity events (who did what, when) and its action invocations
 * (who ran which button, with the outcome), oldest first, below the card.
 */
async function showHistory(n, li) {
  try {
    const [{ events }, invocations] = await Promise.all([
      api('GET', `/api/v1/notifications/${n.id}/activity`),
      actionHistory(ui, n),
    ])
    const lines = [
      ...events.map((ev) => ({
        at: ev.created_at,
        text: `${ev.username} ${ev.action === 'acknowledge' ? 'acknowledged' : 'resolved'} (${ev.from_state} → ${ev.to_state}) `,
      })),
      ...invocations.map((inv) => ({
        at: inv.finished_at ?? inv.created_at,
        text: invocationText(n, inv),
        class: inv.outcome === 'failure' ? 'failure' : undefined,
      })),
    ].sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0))
    li.querySelector('.history')?.remove()
    li.append(
      h(
        'ol',
        { class: 'history', 'aria-label': 'Activity history' },
        lines.length
          ? lines.map((line) =>
              h(
                'li',
                { class: line.class },
                line.text,
                h('time', { datetime: line.at, title: line.at }, relative(line.at)),
              ),
            )
          : h('li', { class: 'muted' }, 'No activity yet.'),
      ),
    )
  } catch (err) {
    toast(err.message)
  }
}

function select(options, value, onchange, label) {
  return h(
    'select',
    { 'aria-label': label, onchange: (e) => onchange(e.target.value) },
    options.map(([v, text]) => h('option', { value: v, selected: v === value }, text)),
  )
}

function navigation() {
  return h(
    'nav',
    {},
    h('h1', {}, 'Notify'),
    h(
      'ul',
      {},
      h(
        'li',
        {},
        h(
          'button',
          {
            'aria-current': state.channel === undefined && state.view === undefined ? 'true' : 'false',
            onclick: () => choose(undefined),
          },
          'All channels',
          unreadBadge(),
        ),
      ),
      state.channels.map((c) =>
        h(
          'li',
          {},
          h(
            'button',
            {
              style: { '--chan': c.accent_color },
              'aria-current': state.channel === c.name && state.view === undefined ? 'true' : 'false',
              onclick: () => choose(c.name),
            },
            h('span', {}, c.display_name),
            c.visibility === 'private' ? h('span', { class: 'muted private' }, 'private') : '',
            unreadBadge(c.name),
          ),
        ),
      ),
    ),
    h(
      'div',
      { class: 'me muted' },
      `Signed in as ${state.me.username}`,
      ' ',
      h('button', { onclick: signOut }, 'Sign out'),
      h(
        'p',
        {},
        h(
          'button',
          { 'aria-current': state.view === 'push' ? 'true' : 'false', onclick: openPush },
          'Push notifications',
        ),
      ),
      managesChannels(state.me, state.channels)
        ? h(
            'p',
            {},
            h(
              'button',
              { 'aria-current': state.view === 'channels' ? 'true' : 'false', onclick: openChannels },
              'Manage channels',
            ),
          )
        : '',
      state.me.admin
        ? h(
            'p',
            {},
            h(
              'button',
              { 'aria-current': state.view === 'admin' ? 'true' : 'false', onclick: openAdmin },
              'Administration',
            ),
            ' ',
            h('button', { 'aria-current': state.view === 'users' ? 'true' : 'false', onclick: openUsers }, 'Users'),
          )
        : '',
    ),
  )
}

function openUsers() {
  state.view = 'users'
  openPanel(ui).catch((err) => toast(err.message))
}

/** Open a view other than the inbox: `build()` returns its content section. */
async function openView(name, build) {
  state.view = name
  const draw = async () => {
    const content = await build(draw)
    if (state.view === name) app.replaceChildren(h('div', { class: 'layout' }, navigation(), content))
  }
  app.replaceChildren(
    h(
      'div',
      { class: 'layout' },
      navigation(),
      h('section', { class: 'content' }, h('p', { class: 'muted' }, 'Loading…')),
    ),
  )
  await draw().catch((err) => toast(err.message))
}

function openPush() {
  void openView('push', pushView)
}

function openChannels() {
  void openView('channels', (draw) => channelAdminView(draw, state.me))
}

function openAdmin() {
  state.view = 'admin'
  // Replace the inbox at once, so nothing of the previous view lingers while loading.
  app.replaceChildren(
    h(
      'div',
      { class: 'layout' },
      navigation(),
      h('section', { class: 'content' }, h('p', { class: 'muted' }, 'Loading…')),
    ),
  )
  renderAdmin().catch((err) => toast(err.message))
}

function render() {
  // Another view is open: only its navigation follows (channel names, counts).
  if (state.view === 'push' || state.view === 'channels') document.querySelector('nav')?.replaceWith(navigation())
  if (state.view !== undefined) return
  const nav = navigation()
  const search = h('input', {
    type: 'search',
    placeholder: 'Search (/)',
    value: state.q,
    'aria-label': 'Search',
    onchange: (e) => {
      state.q = e.target.value
      void loadInbox()
    },
  })
  const toolbar = h(
    'div',
    { class: 'toolbar' },
    search,
    select(
      [
        ['unread', 'Unread only'],
        ['all', 'Read & unread'],
      ],
      state.unreadOnly ? 'unread' : 'all',
      (v) => {
        state.unreadOnly = v === 'unread'
        void loadInbox()
      },
      'Read filter',
    ),
    select(
      [
        ['', 'Any state'],
        ['received', 'Received'],
        ['firing', 'Firing'],
        ['acknowledged', 'Acknowledged'],
        ['resolved', 'Resolved'],
        ['archived', 'Archived'],
      ],
      state.lifecycle,
      (v) => {
        state.lifecycle = v
        void loadInbox()
      },
      'Lifecycle',
    ),
    select(
      [
        ['', 'Any severity'],
        ['info', 'Info'],
        ['success', 'Success'],
        ['warning', 'Warning'],
        ['error', 'Error'],
        ['critical', 'Critical'],
      ],
      state.severity,
      (v) => {
        state.severity = v
        void loadInbox()
      },
      'Severity',
    ),
    h('button', { onclick: markChannelRead }, state.channel ? 'Mark channel read' : 'Mark all read'),
  )
  const list = state.items.length
    ? h('ul', { class: 'cards' }, state.items.map(card))
    : h('p', { class: 'muted' }, state.unreadOnly ? 'Nothing unread.' : 'No notifications.')
  const more = state.next ? h('button', { class: 'more', onclick: loadMore }, 'Load more') : ''
  const focused = document.activeElement?.getAttribute('aria-label')
  const commands = state.channel && canOperate(state.channel) ? commandBar(ui, state.channel) : ''
  app.replaceChildren(
    h('div', { class: 'layout' }, nav, h('section', { class: 'content' }, toolbar, commands, list, more)),
  )
  if (focused === 'Search') search.focus()
  if (focused === 'Slash command') document.querySelector('input[name=command]')?.focus()
}

function choose(channel) {
  state.view = undefined
  state.channel = channel
  state.unreadOnly = true // channel timelines open in Unread only (spec)
  state.selected = -1
  render()
  void loadInbox()
}

async function signOut() {
  state.stream?.close()
  // A shared browser must not keep receiving this reader's pushes.
  await revokeThisBrowser().catch(() => undefined)
  await api('POST', '/api/v1/auth/logout').catch(() => undefined)
  signIn()
}

document.addEventListener('keydown', (e) => {
  if (
    !state.me ||
    e.target instanceof HTMLInputElement ||
    e.target instanceof HTMLSelectElement ||
    e.ctrlKey ||
    e.metaKey ||
    e.altKey
  )
    return
  const item = state.items[state.selected]
  const keys = {
    j: () => {
      state.selected = Math.min(state.selected + 1, state.items.length - 1)
      render()
    },
    k: () => {
      state.selected = Math.max(state.selected - 1, 0)
      render()
    },
    e: () => item && act(item, state.lifecycle === 'archived' ? 'restore' : 'archive'),
    a: () => item && canOperate(item.channel) && act(item, 'acknowledge'),
    r: () => item && canOperate(item.channel) && act(item, 'resolve'),
    '/': () => document.querySelector('input[type=search]')?.focus(),
  }
  const fn = keys[e.key]
  if (fn) {
    e.preventDefault()
    fn()
    document.querySelector('.card.selected')?.scrollIntoView({ block: 'nearest' })
  }
})

async function start() {
  const focus = Number(new URLSearchParams(location.search).get('notification'))
  if (Number.isSafeInteger(focus) && focus > 0) {
    state.focus = focus
    history.replaceState(null, '', '/')
  }
  try {
    state.me = (await api('GET', '/api/v1/auth/me')).user
  } catch (err) {
    if (err.status === 401) return signIn()
    throw err
  }
  const desktop = DESKTOP_ROUTE.exec(location.hash)
  if (desktop) {
    state.stream?.close() // live updates would redraw the inbox over the approval
    state.view = 'desktop'
    return renderDesktopApproval(ui, desktop[1], () => {
      state.view = undefined
      history.replaceState(null, '', '/')
      void start()
    })
  }
  await loadChannels()
  render()
  connect()
  void refreshUnread().catch(() => undefined)
}

// A desktop app may open its approval link in a tab that already shows the client.
window.addEventListener('hashchange', () => {
  if (DESKTOP_ROUTE.test(location.hash)) void start()
})

void start()
