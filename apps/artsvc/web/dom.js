// DOM building without HTML strings: user text only ever becomes text nodes or attribute values.

/**
 * h('button', { type: 'button', onclick: fn, class: 'primary' }, 'Save')
 * Attributes named on* become event listeners; null/false attributes are left out;
 * string children become text nodes.
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag)
  for (const [key, value] of Object.entries(attrs ?? {})) {
    if (value === null || value === undefined || value === false) continue
    if (key.startsWith('on') && typeof value === 'function') el.addEventListener(key.slice(2), value)
    else if (key === 'value') el.value = value
    else el.setAttribute(key, value === true ? '' : String(value))
  }
  append(el, children)
  return el
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue
    el.append(child instanceof Node ? child : document.createTextNode(String(child)))
  }
}

/** Replace an element's children. */
export function fill(el, ...children) {
  el.replaceChildren()
  append(el, children)
  return el
}

let ids = 0
/** A unique id for label/for and aria-describedby pairs. */
export const uid = (prefix) => `${prefix}-${++ids}`

/** A labelled form field: label + control (+ optional hint tied with aria-describedby). */
export function field(labelText, control, hint) {
  control.id ||= uid('f')
  const parts = [h('label', { for: control.id }, labelText), control]
  if (hint) {
    const hintId = uid('hint')
    control.setAttribute('aria-describedby', hintId)
    parts.push(h('small', { id: hintId, class: 'hint' }, hint))
  }
  return h('div', { class: 'field' }, parts)
}

export function when(iso) {
  if (!iso) return ''
  const d = new Date(iso)
  return h(
    'time',
    { datetime: iso, title: iso },
    d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' }),
  )
}

export function bytes(n) {
  if (n < 1024) return `${n} B`
  if (n < 1024 * 1024) return `${+(n / 1024).toFixed(1)} KiB`
  return `${+(n / 1024 / 1024).toFixed(1)} MiB`
}

/** A modal <dialog> (focus is trapped and Escape closes it); removed from the page when closed. */
export function modal(titleText, ...content) {
  const titleId = uid('dlg')
  const dialog = h('dialog', { 'aria-labelledby': titleId, class: 'modal' })
  const close = h(
    'button',
    { type: 'button', class: 'quiet close', 'aria-label': 'Close', onclick: () => dialog.close() },
    '×',
  )
  fill(dialog, h('div', { class: 'modal-head' }, h('h2', { id: titleId }, titleText), close), ...content)
  const opener = document.activeElement
  dialog.addEventListener('close', () => {
    dialog.remove()
    // The browser returns focus to the opener, unless the page was rebuilt meanwhile (a
    // share created, a version published): then to the control that took its place.
    if (!document.activeElement || document.activeElement === document.body) refocus(opener)
  })
  document.body.append(dialog)
  dialog.showModal()
  return dialog
}

/**
 * Focus `el`, or, when a re-render replaced it, the control that took its place (the same
 * aria-label outside any dialog): a keyboard user keeps their place instead of starting over
 * at the top of the page.
 */
export function refocus(el) {
  if (!el || el === document.body || !(el instanceof HTMLElement)) return
  if (el.isConnected) return el.focus()
  const label = el.getAttribute('aria-label')
  if (!label) return
  for (const candidate of document.querySelectorAll('[aria-label]')) {
    if (candidate.getAttribute('aria-label') === label && !candidate.closest('dialog')) return candidate.focus()
  }
}

/**
 * After a list was rebuilt under a keyboard user (a revoke, a removal), the button they
 * pressed is gone and focus fell to the page: put it on `target` (a list gets tabindex -1),
 * so the next Tab continues there and a screen reader says where they are.
 */
export function keepFocus(target) {
  if (document.activeElement && document.activeElement !== document.body) return
  if (!target.hasAttribute('tabindex') && target.tabIndex < 0) target.setAttribute('tabindex', '-1')
  target.focus()
}

/** Ask before a destructive action; resolves true only when confirmed. */
export function confirmAction(titleText, message, confirmLabel) {
  return new Promise((resolve) => {
    let confirmed = false
    const cancel = h('button', { type: 'button', onclick: () => dialog.close() }, 'Cancel')
    const ok = h(
      'button',
      {
        type: 'button',
        class: 'danger',
        onclick: () => {
          confirmed = true
          dialog.close()
        },
      },
      confirmLabel,
    )
    const dialog = modal(titleText, h('p', {}, message), h('div', { class: 'actions' }, cancel, ok))
    dialog.addEventListener('close', () => resolve(confirmed))
    cancel.focus()
  })
}
