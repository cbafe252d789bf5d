// The realtime stream (GET /api/v1/stream, Server-Sent Events; EventSource resumes with
// Last-Event-ID by itself): live cards, lifecycle and read-state changes, channel and
// membership changes.

import { scheduleUnread } from './unread.js'

/**
 * Open the stream for the signed-in reader (closing any previous one) and apply its events.
 * `closed(es)` is called when the stream has closed for good (see below).
 */
export function connect({ state, inboxLoading, loadInbox, loadChannels, matches, render, closed }) {
  state.stream?.close()
  const es = new EventSource('/api/v1/stream')
  state.stream = es
  // EventSource retries a dropped connection by itself but gives up on an HTTP error: a 401
  // once the session has expired or was revoked (the server ends the stream then), a proxy's
  // 502 while notify restarts.
  es.addEventListener('error', () => {
    if (es.readyState === EventSource.CLOSED && state.stream === es) closed(es)
  })
  es.addEventListener('ready', () => void loadInbox())
  es.addEventListener('notification', (e) => {
    const n = JSON.parse(e.data).notification
    if (inboxLoading()) state.arrived.push(n)
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
  // A resume the server could not replay (too far behind, or past its change log's retention):
  // what this page shows may be stale anywhere. `ready` follows and reloads the inbox.
  for (const type of ['reset', 'channel', 'membership'])
    es.addEventListener(type, async () => {
      await loadChannels()
      render()
    })
}
