// The client's DOM and HTTP helpers, shared by every module: h() builds elements with text
// children only (never innerHTML), api() calls notify's JSON API, toast() shows an error.

import { safeHref } from './markdown.js'

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

/**
 * What a 401 from any call but the sign-in ones means: the session has ended (expired, revoked,
 * the reader disabled). app.js sets `ended` to show the sign-in form; the call still fails.
 */
export const session = { ended: () => {} }

export async function api(method, path, body, headers = {}) {
  const res = await fetch(path, {
    method,
    headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const data = res.status === 204 ? {} : await res.json().catch(() => ({}))
  if (res.status === 401 && !path.startsWith('/api/v1/auth/')) session.ended()
  if (!res.ok)
    throw Object.assign(new Error(data.error?.message ?? `HTTP ${res.status}`), {
      code: data.error?.code,
      status: res.status,
    })
  return data
}

/** A relative time ("3 min ago"); callers put the exact RFC 3339 time in a title. */
export function relative(iso) {
  const s = Math.round((Date.now() - Date.parse(iso)) / 1000)
  if (s < 60) return 'just now'
  if (s < 3600) return `${Math.floor(s / 60)} min ago`
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`
  return `${Math.floor(s / 86400)} d ago`
}

/** A link opened in a new tab without opener or referrer; text only when the URL is not safe. */
export function link(label, url) {
  const href = safeHref(url)
  return href ? h('a', { href, target: '_blank', rel: 'noopener noreferrer' }, label) : h('span', {}, label)
}

export function toast(text) {
  const t = h('p', { class: 'error', role: 'alert' }, text)
  const toolbar = document.querySelector('.toolbar')
  if (toolbar) toolbar.after(t)
  else document.querySelector('.content')?.prepend(t)
  setTimeout(() => t.remove(), 5000)
}
