// Unread counts in the navigation: fetched from GET /api/v1/unread, refreshed (debounced)
// after every stream event that can change them, and written into the badges in place so
// the navigation keeps its focus.
import { api } from './dom.js'

let counts = { channels: {}, total: 0, more: false }
let timer

function label(n, more) {
  return more ? '99+' : n > 0 ? String(n) : ''
}

/** The badge of a channel (or of "All channels" with no name), filled by refresh(). */
export function unreadBadge(channel) {
  const span = document.createElement('span')
  span.className = 'count'
  if (channel) span.dataset.unreadFor = channel
  else span.dataset.unreadAll = ''
  paint(span)
  return span
}

function paint(span) {
  const all = span.dataset.unreadAll !== undefined
  const c = all ? { unread: counts.total, more: counts.more } : counts.channels[span.dataset.unreadFor]
  const text = c ? label(c.unread, c.more) : ''
  span.textContent = text
  if (text) span.setAttribute('aria-label', `${text} unread`)
  else span.removeAttribute('aria-label')
}

export async function refreshUnread() {
  const r = await api('GET', '/api/v1/unread')
  counts = {
    channels: Object.fromEntries(r.channels.map((c) => [c.channel, c])),
    total: r.total,
    more: r.more,
  }
  for (const span of document.querySelectorAll('span.count')) paint(span)
}

/** Refresh soon; a burst of events costs one request. */
export function scheduleUnread() {
  clearTimeout(timer)
  timer = setTimeout(() => void refreshUnread().catch(() => undefined), 150)
}
