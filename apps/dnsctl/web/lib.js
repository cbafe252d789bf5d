// Shared pieces of the console: DOM building (text only: h() never touches innerHTML), the API
// client (session cookie + CSRF header on every change), and the dry-run diff panel every
// change shows before it is committed.

/** The session's CSRF token, set by app.js after sign-in. */
export const session = { csrf: '', name: '' }

/** An element with attributes and children; strings become text nodes, never HTML. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false || v === null) continue
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v)
    else if (k === 'value') el.value = v
    else el.setAttribute(k, v === true ? '' : String(v))
  }
  for (const c of children.flat(Number.POSITIVE_INFINITY))
    if (c !== undefined && c !== null && c !== false) el.append(c instanceof Node ? c : String(c))
  return el
}

const SVG = 'http://www.w3.org/2000/svg'
/** An SVG element with attributes (charts). */
export function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag)
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined) el.setAttribute(k, String(v))
  for (const c of children.flat()) if (c) el.append(c instanceof Node ? c : String(c))
  return el
}

export class ApiError extends Error {
  constructor(message, code, status) {
    super(message)
    this.code = code
    this.status = status
  }
}

/** Called with an ApiError whose code says the session is gone (app.js shows the sign-in page). */
export const hooks = { signedOut: () => {} }

/**
 * A JSON request to the API through the console listener. `options.revision` becomes If-Match.
 * Resolves to { body, etag }.
 */
export async function api(method, path, body, options = {}) {
  const headers = {}
  if (body !== undefined) headers['content-type'] = 'application/json'
  if (method !== 'GET') headers['x-csrf-token'] = session.csrf
  if (options.revision) headers['if-match'] = `"${options.revision}"`
  const res = await fetch(path, {
    method,
    headers,
    credentials: 'same-origin',
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await res.text()
  let data = {}
  try {
    data = text ? JSON.parse(text) : {}
  } catch {}
  if (!res.ok) {
    const err = new ApiError(data.error?.message ?? `HTTP ${res.status}`, data.error?.code, res.status)
    if (err.code === 'console_session_required') hooks.signedOut()
    throw err
  }
  return { body: data, etag: res.headers.get('etag')?.replace(/^"|"$/g, '') }
}

/** A region that shows one error (code and message) or nothing; role=alert reads it out. */
export function errorBox() {
  const el = h('p', { class: 'error', role: 'alert', hidden: true })
  return Object.assign(el, {
    show(err) {
      el.hidden = false
      el.textContent = err.code ? `${err.message} (${err.code})` : String(err.message ?? err)
    },
    clear() {
      el.hidden = true
      el.textContent = ''
    },
  })
}

/** A one-line notice that a change went through. */
export function notice(text) {
  return h('p', { class: 'notice', role: 'status' }, text)
}

/** The record-level plan of a dry run: counts, then `-`/`+` lines. */
export function diffView(diff, title = 'Dry run') {
  const lines = diff.records.map((r) =>
    h(
      'li',
      { class: r.op === 'add' ? 'add' : 'remove' },
      h('span', { class: 'sign', 'aria-hidden': 'true' }, r.op === 'add' ? '+' : '−'),
      h('span', { class: 'sr' }, r.op === 'add' ? 'add ' : 'remove '),
      r.record,
    ),
  )
  return h(
    'section',
    { class: 'diff', 'aria-label': title },
    h('h3', {}, `${title}: ${diff.added} to add, ${diff.removed} to remove, ${diff.unchanged} unchanged`),
    lines.length ? h('ul', { class: 'records' }, lines) : h('p', { class: 'muted' }, 'No record changes.'),
  )
}

/**
 * Put the focus back on the control that opened a panel or dialog. A view that redrew after
 * the change replaced that control: its namesake (same aria-label, or text) in the new markup
 * takes the focus, else the main region does.
 */
export function returnFocus(trigger) {
  if (!(trigger instanceof HTMLElement) || trigger === document.body) return
  if (trigger.isConnected) return trigger.focus()
  const label = trigger.getAttribute('aria-label')
  const text = trigger.textContent
  const twins = [...document.querySelectorAll(trigger.tagName)].filter((el) =>
    label ? el.getAttribute('aria-label') === label : el.textContent === text,
  )
  ;(twins.length === 1 ? twins[0] : document.getElementById('main'))?.focus()
}

/**
 * A confirmation panel inside the page (a dry run's plan with its Commit): Escape closes it
 * like its Cancel button, and closing it, either way, returns the focus to `trigger`.
 * Returns `close(after)`, which empties `container`, then runs `after` and returns the focus.
 */
export function closablePanel(container, panel, trigger) {
  const close = async (after) => {
    container.replaceChildren()
    try {
      await after?.()
    } finally {
      returnFocus(trigger)
    }
  }
  panel.addEventListener('keydown', (e) => {
    if (e.key !== 'Escape') return
    e.stopPropagation()
    close()
  })
  return close
}

/**
 * Two-step change: `plan()` runs the dry run and resolves to its diff; the panel shows it with
 * "Commit" and "Cancel" (or Escape); `commit()` runs the change for real. The focus moves to
 * Commit, and back to the control that asked for the plan once the panel closes.
 */
export function planThenCommit(container, { plan, commit, label = 'Commit', done }) {
  const trigger = document.activeElement
  const errors = errorBox()
  const panel = h('div', { class: 'plan', role: 'group', 'aria-label': 'Dry run' }, errors)
  container.replaceChildren(panel)
  const close = closablePanel(container, panel, trigger)
  plan().then(
    (diff) => {
      const commitButton = h('button', { class: 'primary', type: 'button' }, label)
      const cancel = h('button', { type: 'button', onclick: () => close() }, 'Cancel')
      commitButton.addEventListener('click', async () => {
        commitButton.disabled = true
        errors.clear()
        let result
        try {
          result = await commit()
        } catch (err) {
          errors.show(err)
          commitButton.disabled = false
          return
        }
        await close(() => done?.(result))
      })
      panel.append(diffView(diff), h('div', { class: 'actions' }, commitButton, cancel))
      commitButton.focus()
    },
    (err) => {
      errors.show(err)
      const closeButton = h('button', { type: 'button', onclick: () => close() }, 'Close')
      panel.append(h('div', { class: 'actions' }, closeButton))
      closeButton.focus()
    },
  )
}

/**
 * A modal confirmation (<dialog> opened with showModal: the rest of the page is inert, the
 * focus moves into it, Escape cancels) that returns the focus to the control that opened it.
 * With `typed`, the action stays disabled until that text is typed (deleting a zone). Resolves
 * true when confirmed, false when cancelled.
 */
export function confirmDialog({ title, message, action, danger = false, typed }) {
  const trigger = document.activeElement
  return new Promise((resolve) => {
    const confirmButton = h('button', { type: 'submit', class: danger ? 'danger' : 'primary' }, action)
    const cancel = h('button', { type: 'button' }, 'Cancel')
    const input = typed
      ? h('input', { autocomplete: 'off', spellcheck: 'false', 'aria-describedby': 'confirm-message' })
      : null
    const form = h(
      'form',
      { method: 'dialog' },
      h('h2', { id: 'confirm-title' }, title),
      h('p', { id: 'confirm-message' }, message),
      input ? labelled(`Type ${typed} to confirm`, input) : null,
      h('div', { class: 'actions' }, confirmButton, cancel),
    )
    const dialog = h('dialog', { class: 'confirm', 'aria-labelledby': 'confirm-title' }, form)
    let confirmed = false
    if (input) {
      confirmButton.disabled = true
      input.addEventListener('input', () => {
        confirmButton.disabled = input.value.trim() !== typed
      })
    }
    form.addEventListener('submit', (e) => {
      if (input && input.value.trim() !== typed) return e.preventDefault()
      confirmed = true
    })
    cancel.addEventListener('click', () => dialog.close())
    // The page behind is inert, but Tab would leave for the browser's own controls: it goes
    // round the dialog's instead.
    dialog.addEventListener('keydown', (e) => {
      if (e.key !== 'Tab') return
      const focusable = [...dialog.querySelectorAll('input, button')].filter((el) => !el.disabled)
      const [first, last] = [focusable[0], focusable.at(-1)]
      if (e.shiftKey ? document.activeElement === first : document.activeElement === last) {
        e.preventDefault()
        ;(e.shiftKey ? last : first).focus()
      }
    })
    dialog.addEventListener('close', () => {
      dialog.remove()
      returnFocus(trigger)
      resolve(confirmed)
    })
    document.body.append(dialog)
    dialog.showModal()
    // A destructive action starts on what cannot do harm: the text box, or Cancel.
    ;(input ?? (danger ? cancel : confirmButton)).focus()
  })
}

/**
 * A table with a header row; `rows` are arrays of cells (strings or nodes). Each cell carries
 * its column's heading (`data-label`), which the wide tables (history, audit, replication,
 * provider records) show beside the value on a phone, where their rows become blocks (app.css)
 * instead of scrolling sideways.
 */
export function table(caption, headers, rows, attrs = {}) {
  return h(
    'table',
    attrs,
    caption ? h('caption', {}, caption) : null,
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        headers.map((x) => h('th', { scope: 'col' }, x)),
      ),
    ),
    h(
      'tbody',
      {},
      rows.map((r) =>
        r instanceof Node
          ? r
          : h(
              'tr',
              {},
              r.map((c, i) =>
                h('td', typeof headers[i] === 'string' && headers[i] ? { 'data-label': headers[i] } : {}, c),
              ),
            ),
      ),
    ),
  )
}

let fieldIds = 0
/** A labelled form field; the hint is the input's description, not part of its name. */
export function labelled(label, input, hint) {
  const id = input.id || `f${++fieldIds}`
  input.id = id
  const small = hint ? h('small', { class: 'muted', id: `${id}-hint` }, hint) : null
  if (small) input.setAttribute('aria-describedby', small.id)
  return h('div', { class: 'field' }, h('label', { for: id }, label), input, small)
}

/** "3 min ago" style age of an RFC 3339 time, with the exact time as a tooltip. */
export function when(iso) {
  if (!iso) return h('span', { class: 'muted' }, 'never')
  const sec = Math.round((Date.now() - Date.parse(iso)) / 1000)
  const text = sec < 0 ? `in ${ago(-sec)}` : sec < 60 ? 'just now' : `${ago(sec)} ago`
  return h('time', { datetime: iso, title: iso }, text)
}

function ago(sec) {
  if (sec < 3600) return `${Math.max(1, Math.floor(sec / 60))} min`
  if (sec < 86400) return `${Math.floor(sec / 3600)} h`
  return `${Math.floor(sec / 86400)} d`
}

/** Offer `text` as a file download (zone export) without leaving the page. */
export function download(filename, text) {
  const url = URL.createObjectURL(new Blob([text], { type: 'text/plain' }))
  const a = h('a', { href: url, download: filename, hidden: true })
  document.body.append(a)
  a.click()
  a.remove()
  setTimeout(() => URL.revokeObjectURL(url), 1000)
}

export const enc = encodeURIComponent

/** "1 zone", "3 zones", "0 zones": a count with its noun in agreement (`plural` when not noun + s). */
export function count(n, noun, plural = `${noun}s`) {
  return `${typeof n === 'number' ? n.toLocaleString() : n} ${n === 1 ? noun : plural}`
}
