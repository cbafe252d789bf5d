// The notify service worker: shows Web Push messages as system notifications and opens the
// item when one is clicked. Push text is only ever passed to showNotification as text.
// Message format: README "Push notifications" ({v, id, channel, title, body, severity, url}).

self.addEventListener('install', () => self.skipWaiting())
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()))

function parse(data) {
  if (!data) return {}
  try {
    const m = data.json()
    return m && typeof m === 'object' ? m : {}
  } catch {
    return { body: data.text() }
  }
}

const text = (v, fallback = '') => (typeof v === 'string' ? v : fallback)

/** Only this origin's pages are opened from a notification. */
function localUrl(url) {
  try {
    const u = new URL(text(url, '/'), self.location.origin)
    return u.origin === self.location.origin ? u.href : self.location.origin
  } catch {
    return self.location.origin
  }
}

self.addEventListener('push', (event) => {
  const m = parse(event.data)
  const where = [m.channel ? `#${text(m.channel)}` : '', text(m.severity), text(m.source)].filter(Boolean)
  const body = [where.join(' · '), text(m.body)].filter(Boolean).join('\n')
  event.waitUntil(
    self.registration.showNotification(text(m.title) || 'Notify', {
      body,
      icon: '/icon.svg',
      // One system notification per item: a repeated push replaces it instead of stacking. A
      // summary of held pushes replaces the previous summary.
      tag: m.summary === true ? 'notify-summary' : Number.isInteger(m.id) ? `notification-${m.id}` : undefined,
      timestamp: Date.parse(text(m.created_at)) || Date.now(),
      requireInteraction: m.severity === 'critical',
      data: { url: localUrl(m.url) },
    }),
  )
})

self.addEventListener('notificationclick', (event) => {
  event.notification.close()
  const url = localUrl(event.notification.data?.url)
  event.waitUntil(
    (async () => {
      const windows = await self.clients.matchAll({ type: 'window', includeUncontrolled: true })
      const open = windows.find((w) => new URL(w.url).origin === self.location.origin)
      if (open) {
        await open.focus()
        return open.navigate(url).catch(() => undefined)
      }
      return self.clients.openWindow(url)
    })(),
  )
})

// The push service replaced the subscription (browsers do this now and then): register the
// new one, so pushes keep arriving without the reader doing anything.
self.addEventListener('pushsubscriptionchange', (event) => {
  event.waitUntil(
    (async () => {
      let sub = event.newSubscription
      if (!sub) {
        const res = await fetch('/api/v1/push/key', { credentials: 'same-origin' })
        if (!res.ok) return
        const { public_key } = await res.json()
        sub = await self.registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: public_key })
      }
      await fetch('/api/v1/push/subscriptions', {
        method: 'POST',
        credentials: 'same-origin',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(sub.toJSON()),
      })
    })(),
  )
})
