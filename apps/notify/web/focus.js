// Keyboard focus that survives the client rebuilding a view. The views are redrawn from state
// (a live card, an action's answer, a panel reloaded after a change), which removes the
// focused control: the browser then puts focus on <body>, and a keyboard reader starts again
// from the top of the page. Here the focused control is remembered by what it is (its row or
// card, its name, its place among its row's controls), and when it disappears focus moves to
// the same control in the new view, else to its row's control at the same place, else to the
// card or row now at the same place in the list.

// What marks a row or card across redraws: a card's id, a user, a target, or a `data-key`.
const HOLDERS = ['data-key', 'data-id', 'data-user', 'data-target']
const HOLDER = HOLDERS.map((a) => `[${a}]`).join(',')
const FOCUSABLE = 'button:not([disabled]), a[href], input:not([disabled]), select:not([disabled]), textarea, [tabindex]'

let mark // the focused control, described; undefined when nothing is to be restored
let root // the element followed (keepFocus)

function nameOf(el) {
  return el.dataset.key ?? el.getAttribute('aria-label') ?? el.textContent.trim()
}

function describe(el) {
  const holder = el.closest(HOLDER)
  const attr = holder ? HOLDERS.find((a) => holder.hasAttribute(a)) : undefined
  const inHolder = holder ? [...holder.querySelectorAll(FOCUSABLE)] : []
  const value = holder?.getAttribute(attr)
  // Keys name their kind before a colon (`hook:12`, `channel:ops`): peers are of the same kind.
  const kind =
    attr === 'data-key' && value.includes(':') ? `[data-key^="${CSS.escape(value.split(':')[0])}:"]` : `[${attr}]`
  const peers = holder ? [...document.querySelectorAll(kind)] : []
  return {
    el,
    tag: el.tagName,
    name: nameOf(el),
    holder: holder ? `[${attr}="${CSS.escape(value)}"]` : undefined,
    kind,
    index: inHolder.indexOf(el),
    place: peers.indexOf(holder),
  }
}

function same(root, m) {
  return [...root.querySelectorAll(m.tag)].find((el) => nameOf(el) === m.name && el.matches(FOCUSABLE))
}

/** In a row or card: the same control, else the one at the same place, else the card itself. */
function pick(row, m) {
  const controls = [...row.querySelectorAll(FOCUSABLE)]
  return same(row, m) ?? controls[Math.min(m.index, controls.length - 1)] ?? (row.matches(FOCUSABLE) ? row : undefined)
}

/** The control standing for `m` in the view as it is now, if there is one yet. */
function find(root, m) {
  if (!m.holder) return same(root, m)
  // Its own row or card; when that is gone (read, archived) or has nothing left to focus (a
  // revoked webhook), the nearest one after it, else before it.
  const holder = root.querySelector(m.holder)
  const peers = [...root.querySelectorAll(m.kind)]
  const at = holder ? peers.indexOf(holder) : Math.min(m.place, peers.length)
  const after = peers.slice(holder ? at + 1 : at)
  const before = peers.slice(0, at).reverse()
  for (const row of [...(holder ? [holder] : []), ...after, ...before]) {
    const el = pick(row, m)
    if (el) return el
  }
  return undefined
}

/**
 * Focus back from a dialog (confirm.js) to `opener`, the control that opened it; when a redraw
 * removed it meanwhile, to the control standing for it now.
 */
export function returnFocus(opener) {
  if (!(opener instanceof HTMLElement)) return
  if (opener.isConnected) opener.focus()
  else if (mark?.el === opener) find(root, mark)?.focus()
}

/** Start following focus inside `main` (the client's main element). */
export function keepFocus(main) {
  root = main
  document.addEventListener('focusin', (e) => {
    if (root.contains(e.target)) mark = describe(e.target)
  })
  document.addEventListener('focusout', (e) => {
    const left = e.target
    // Into a dialog opened from here: focus comes back when it closes (returnFocus).
    if (e.relatedTarget instanceof Element && e.relatedTarget.closest('dialog')) return
    // Still in the page: the reader moved focus away on purpose (a click on the page's
    // background); nothing to restore. Removed: the view was redrawn under it.
    queueMicrotask(() => {
      if (mark?.el === left && left.isConnected && document.activeElement !== left) mark = undefined
    })
  })
  new MutationObserver(() => {
    if (!mark || mark.el.isConnected) return
    const active = document.activeElement
    if (active && active !== document.body && root.contains(active)) return
    // A modal dialog holds focus, and the page behind it is inert: its closing returns focus.
    if (document.querySelector('dialog[open]')) return
    const el = find(root, mark)
    // A view still loading has no match yet: the mark waits for the next change.
    if (el) el.focus({ preventScroll: false })
  }).observe(root, { childList: true, subtree: true })
}
