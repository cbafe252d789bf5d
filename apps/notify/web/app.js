// The notify web client: plain DOM, no build step. Every piece of text from a payload is
// set with textContent (the h() helper never touches innerHTML), links get
// rel="noopener noreferrer", and the page runs under a CSP without inline scripts.
// This module holds the client's state, sign-in, the inbox (loading, toolbar, keyboard)
// and the navigation; the other views and parts live in their own modules: dom.js (h, api,
// toast), cards.js, stream.js (realtime), admin.js, channel-admin.js, panel.js, push.js,
// actions.js, desktop.js, unread.js, webhook-import.js, markdown.js, focus.js (focus kept
// across redraws), confirm.js (the confirmation dialog).

import { commandBar } from './actions.js'
import { renderAdmin } from './admin.js'
import { card } from './cards.js'
import { channelAdminView, managesChannels } from './channel-admin.js'
import { dismissConfirmation } from './confirm.js'
import { DESKTOP_ROUTE, providerButton, renderDesktopApproval } from './desktop.js'
import { api, h, relative, session, toast } from './dom.js'
import { keepFocus } from './focus.js'
import { openPanel } from './panel.js'
import { pushView, revokeThisBrowser } from './push.js'
import { connect as connectStream } from './stream.js'
import { refreshUnread, unreadBadge } from './unread.js'

const app = document.getElementById('app')
keepFocus(app)
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

// ---- sign-in ---------------------------------------------------------------------------

function signIn(message) {
  // Renders of the views behind it (a late answer, a timer) stay away from the form.
  state.view = 'signin'
  dismissConfirmation()
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
  loadChannels: () => loadChannels(),
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

/**
 * The next page of the list shown. Not while the list is being reloaded (its cursor belongs to
 * the list being replaced), and a page that comes back after a reload started is dropped:
 * otherwise a filter changed just before would mix two lists.
 */
async function loadMore() {
  if (inboxLoading || !state.next) return
  const load = inboxLoads
  const r = await api('GET', query(state.next))
  if (load !== inboxLoads) return
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

async function markChannelRead() {
  if (state.channel) await api('POST', `/api/v1/channels/${encodeURIComponent(state.channel)}/read`)
  else await api('POST', '/api/v1/notifications/read-all')
  await loadInbox()
}

// ---- rendering -------------------------------------------------------------------------

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
            'data-key': 'channel:',
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
              'data-key': `channel:${c.name}`,
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
  renderAdmin(ui).catch((err) => toast(err.message))
}

/** The inbox's toolbar: built with the inbox view and kept in place by render(). */
let toolbar

function inboxToolbar() {
  const searchFor = (text) => {
    if (text === state.q) return
    state.q = text
    void loadInbox()
  }
  const search = h('input', {
    type: 'search',
    placeholder: 'Search (/)',
    value: state.q,
    'aria-label': 'Search',
    onchange: (e) => searchFor(e.target.value),
    // The box's clear button.
    onsearch: (e) => searchFor(e.target.value),
  })
  const readFilter = select(
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
  )
  const lifecycle = select(
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
  )
  const severity = select(
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
  )
  const markRead = h('button', { onclick: markChannelRead }, '')
  const el = h('div', { class: 'toolbar' }, search, readFilter, lifecycle, severity, markRead)
  return { el, search, readFilter, lifecycle, severity, markRead }
}

/** Show the state in the toolbar; the search box keeps what a reader is typing in it. */
function syncToolbar() {
  if (document.activeElement !== toolbar.search) toolbar.search.value = state.q
  toolbar.readFilter.value = state.unreadOnly ? 'unread' : 'all'
  toolbar.lifecycle.value = state.lifecycle
  toolbar.severity.value = state.severity
  toolbar.markRead.textContent = state.channel ? 'Mark channel read' : 'Mark all read'
}

function render() {
  // Another view is open: only its navigation follows (channel names, counts).
  if (state.view === 'push' || state.view === 'channels') document.querySelector('nav')?.replaceWith(navigation())
  if (state.view !== undefined) return
  const nav = navigation()
  const list = state.items.length
    ? h(
        'ul',
        { class: 'cards' },
        state.items.map((n, i) => card(ui, n, i, { canOperate, act })),
      )
    : h('p', { class: 'muted' }, state.unreadOnly ? 'Nothing unread.' : 'No notifications.')
  const more = state.next ? h('button', { class: 'more', onclick: loadMore }, 'Load more') : undefined
  const focused = document.activeElement?.getAttribute('aria-label')
  const commands = state.channel && canOperate(state.channel) ? commandBar(ui, state.channel) : undefined
  const below = [commands, list, more].filter((e) => e !== undefined)
  if (toolbar?.el.isConnected) {
    // Render around the toolbar, never through it: a search box rebuilt under a reader's
    // typing (a load finishing, a live card) lost the text or moved the caret.
    syncToolbar()
    toolbar.el.closest('.layout').querySelector(':scope > nav').replaceWith(nav)
    // The slash-command bar stays in place too when it is the same channel's: moving it would
    // blur its input under the reader's typing and close its suggestions.
    const keep = commands !== undefined && toolbar.el.nextSibling === commands ? commands : toolbar.el
    while (keep.nextSibling) keep.nextSibling.remove()
    keep.after(...below.filter((e) => e !== keep))
  } else {
    toolbar = inboxToolbar()
    syncToolbar()
    app.replaceChildren(h('div', { class: 'layout' }, nav, h('section', { class: 'content' }, toolbar.el, ...below)))
  }
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
    // A question on screen (confirm.js): its keys answer it, not the inbox behind.
    e.target.closest?.('dialog') ||
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
  if (state.view === 'signin') state.view = undefined
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
  openStream()
  void refreshUnread().catch(() => undefined)
}

/** Before opening a stream again that closed on an error other than the session's end. */
const STREAM_RETRY_MS = 5000

function openStream() {
  connectStream({ state, inboxLoading: () => inboxLoading, loadInbox, loadChannels, matches, render, closed })
}

/** The session has ended (a call or the stream was refused with 401): the sign-in form, once. */
function sessionEnded() {
  if (state.view === 'signin') return
  state.stream?.close()
  state.stream = undefined
  signIn('Your session has ended. Sign in again.')
}
session.ended = sessionEnded

/** The stream closed for good: signed out, the sign-in form; otherwise it opens again shortly. */
async function closed(stream) {
  try {
    state.me = (await api('GET', '/api/v1/auth/me')).user
  } catch (err) {
    if (err.status === 401 && state.stream === stream) return sessionEnded()
  }
  setTimeout(() => state.stream === stream && openStream(), STREAM_RETRY_MS)
}

// A desktop app may open its approval link in a tab that already shows the client.
window.addEventListener('hashchange', () => {
  if (DESKTOP_ROUTE.test(location.hash)) void start()
})

void start()
