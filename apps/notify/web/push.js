// Push notifications view: turn Web Push on or off for this browser, choose per channel
// what is pushed, and see (and revoke) the reader's other subscribed browsers.
import { confirmDialog } from './confirm.js'
import { api, h, toast } from './dom.js'

export function pushSupported() {
  return 'serviceWorker' in navigator && 'PushManager' in window && 'Notification' in window
}

function keyBytes(base64url) {
  const b64 = base64url.replace(/-/g, '+').replace(/_/g, '/')
  const raw = atob(b64 + '='.repeat((4 - (b64.length % 4)) % 4))
  return Uint8Array.from(raw, (c) => c.charCodeAt(0))
}

/** A name the reader recognises in their list of browsers. */
function browserLabel() {
  const ua = navigator.userAgent
  const browser = /Firefox\//.test(ua)
    ? 'Firefox'
    : /Edg\//.test(ua)
      ? 'Edge'
      : /Chrome\//.test(ua)
        ? 'Chrome'
        : /Safari\//.test(ua)
          ? 'Safari'
          : 'Browser'
  const os = /Android/.test(ua)
    ? 'Android'
    : /iPhone|iPad/.test(ua)
      ? 'iOS'
      : /Mac OS X/.test(ua)
        ? 'macOS'
        : /Windows/.test(ua)
          ? 'Windows'
          : /Linux/.test(ua)
            ? 'Linux'
            : ''
  return os ? `${browser} on ${os}` : browser
}

async function thisBrowser() {
  if (!pushSupported()) return null
  const reg = await navigator.serviceWorker.getRegistration('/')
  return (await reg?.pushManager.getSubscription()) ?? null
}

async function enable() {
  const permission = await Notification.requestPermission()
  if (permission !== 'granted')
    throw new Error('Notifications are blocked for this site: allow them in the browser settings, then try again.')
  await navigator.serviceWorker.register('/sw.js', { scope: '/' })
  const reg = await navigator.serviceWorker.ready
  const { public_key } = await api('GET', '/api/v1/push/key')
  let sub
  try {
    sub = await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: keyBytes(public_key) })
  } catch (err) {
    throw new Error(`This browser could not reach its push service (${err.message}).`)
  }
  await api('POST', '/api/v1/push/subscriptions', { ...sub.toJSON(), label: browserLabel() })
}

/** Revoke this browser's subscription on the server and in the browser (sign-out, "Turn off"). */
export async function revokeThisBrowser() {
  const sub = await thisBrowser().catch(() => null)
  if (!sub) return
  const { subscriptions } = await api('GET', '/api/v1/push/subscriptions')
  const mine = subscriptions.find((s) => s.endpoint === sub.endpoint)
  if (mine) await api('DELETE', `/api/v1/push/subscriptions/${encodeURIComponent(mine.id)}`)
  await sub.unsubscribe().catch(() => undefined)
}

const MODES = [
  ['all', 'Everything'],
  ['important', 'Warnings and worse'],
  ['off', 'Nothing'],
]

/** The view's content; `rerender` draws it again after a change. */
export async function pushView(rerender) {
  const [{ subscriptions }, { channels }, current] = await Promise.all([
    api('GET', '/api/v1/push/subscriptions'),
    api('GET', '/api/v1/push/preferences'),
    thisBrowser().catch(() => null),
  ])
  const here = current && subscriptions.find((s) => s.endpoint === current.endpoint)
  /** A button's handler: asks `question` first (confirm.js), when there is one. */
  const run = (fn, question) => async (e) => {
    const button = e.currentTarget
    if (question && !(await confirmDialog(question, button))) return
    button.disabled = true
    try {
      await fn()
      await rerender()
    } catch (err) {
      toast(err.message)
      button.disabled = false
    }
  }
  const status = !pushSupported()
    ? h('p', { class: 'muted' }, 'This browser does not support push notifications.')
    : here
      ? h(
          'p',
          {},
          'Push is on for this browser. ',
          h('button', { onclick: run(revokeThisBrowser) }, 'Turn off for this browser'),
        )
      : h(
          'p',
          {},
          Notification.permission === 'denied'
            ? 'Notifications are blocked for this site in the browser settings. '
            : 'Push is off for this browser. ',
          h('button', { class: 'primary', onclick: run(enable) }, 'Turn on for this browser'),
        )
  const choices = h(
    'table',
    { class: 'push-channels' },
    h('thead', {}, h('tr', {}, h('th', {}, 'Channel'), h('th', {}, 'Push'))),
    h(
      'tbody',
      {},
      channels.map((c) =>
        h(
          'tr',
          {},
          h('td', {}, c.display_name),
          h(
            'td',
            {},
            h(
              'select',
              {
                'aria-label': `Push for ${c.display_name}`,
                onchange: async (e) => {
                  try {
                    await api('PUT', `/api/v1/push/preferences/${encodeURIComponent(c.channel)}`, {
                      mode: e.target.value,
                    })
                  } catch (err) {
                    toast(err.message)
                  }
                },
              },
              MODES.map(([v, label]) => h('option', { value: v, selected: v === c.mode }, label)),
            ),
          ),
        ),
      ),
    ),
  )
  const browsers = subscriptions.length
    ? h(
        'ul',
        { class: 'push-browsers' },
        subscriptions.map((s) =>
          h(
            'li',
            { 'data-key': `browser:${s.id}` },
            h('span', {}, s.label, s === here ? ' (this browser)' : ''),
            ' ',
            h(
              'span',
              { class: 'muted' },
              s.last_failure
                ? `last failure ${s.last_failure}`
                : s.last_success_at
                  ? `last push ${s.last_success_at}`
                  : 'no push yet',
            ),
            ' ',
            h(
              'button',
              {
                'aria-label': `Revoke ${s.label}${s === here ? ' (this browser)' : ''}`,
                onclick: run(
                  async () => {
                    if (s === here) await revokeThisBrowser()
                    else await api('DELETE', `/api/v1/push/subscriptions/${encodeURIComponent(s.id)}`)
                  },
                  s === here
                    ? {
                        title: 'Stop push to this browser?',
                        message:
                          'This browser stops receiving your push notifications at once; "Turn on for this browser" subscribes it again.',
                        action: 'Revoke browser',
                      }
                    : {
                        title: `Stop push to ${s.label}?`,
                        message: `${s.label} stops receiving your push notifications at once; to have them there again, turn push on in that browser.`,
                        action: 'Revoke browser',
                      },
                ),
              },
              'Revoke',
            ),
          ),
        ),
      )
    : h('p', { class: 'muted' }, 'No browser receives your push notifications.')
  const testResult = h('p', { role: 'status' })
  const testButton = subscriptions.length
    ? h(
        'button',
        {
          onclick: async (e) => {
            e.target.disabled = true
            try {
              const { results } = await api('POST', '/api/v1/push/test')
              testResult.textContent = results
                .map((r) =>
                  r.result === 'sent'
                    ? `${r.label}: sent`
                    : r.result === 'gone'
                      ? `${r.label}: the browser unsubscribed (removed)`
                      : `${r.label}: failed${r.status ? ` (${r.status})` : ''}`,
                )
                .join('; ')
            } catch (err) {
              toast(err.message)
            } finally {
              e.target.disabled = false
            }
          },
        },
        'Send a test push',
      )
    : ''
  return h(
    'section',
    { class: 'content push' },
    h('h2', {}, 'Push notifications'),
    status,
    h('h3', {}, 'What each channel pushes'),
    choices,
    h('h3', {}, 'Your browsers'),
    browsers,
    h('p', {}, testButton),
    testResult,
  )
}
