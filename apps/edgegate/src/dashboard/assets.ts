/** The dashboard's only script and stylesheet (served from this origin; the CSP allows nothing else). */
export const DASHBOARD_JS = `'use strict'
async function send(method, path, body) {
  const res = await fetch(path, {
    method,
    credentials: 'same-origin',
    headers: body ? { 'content-type': 'application/json' } : {},
    body: body ? JSON.stringify(body) : undefined,
  })
  if (!res.ok) {
    let message = 'request failed (' + res.status + ')'
    try { message = (await res.json()).error.message } catch {}
    throw new Error(message)
  }
}
function show(err) {
  const box = document.getElementById('error')
  if (!box) return
  box.textContent = err.message
  box.hidden = false
  // The box opens the page; a row's button may be screens further down (on a phone always).
  box.scrollIntoView({ block: 'center' })
}
// On a phone a table's rows become cards (the stylesheet's table.cards): each cell is labelled
// with its column's heading. Without this script the tables scroll sideways instead, as do the
// SMTP evidence lists: rows of five short values read better as a table than as tall cards.
function labelCells() {
  for (const table of document.querySelectorAll('table')) {
    if (!table.tHead || table.tHead.rows.length === 0 || table.classList.contains('evidence')) continue
    const heads = []
    for (const th of table.tHead.rows[0].cells) {
      const text = th.querySelector('.sr') ? '' : th.textContent.trim()
      for (let i = 0; i < th.colSpan; i++) heads.push(text)
    }
    for (const body of table.tBodies) {
      for (const row of body.rows) {
        let column = 0
        for (const cell of row.cells) {
          cell.dataset.label = cell.colSpan > 1 ? '' : (heads[column] ?? '')
          column += cell.colSpan
        }
      }
    }
    table.classList.add('cards')
  }
}
// An action reloads the page to show what the server now holds, and a keyboard user's place went
// with it: focus back at the top of a long page, the row they acted on screens away. The control
// that acted is remembered for the reload of this same address and focused again (which also
// scrolls it into view); \`fallback\` when the action removed it (a pairing's row).
const FOCUS_KEY = 'edgegate.focus'
function reloadFocusing(selector, fallback) {
  try {
    sessionStorage.setItem(FOCUS_KEY, JSON.stringify({ at: location.pathname + location.search, selector, fallback }))
  } catch {}
  location.reload()
}
function restoreFocus() {
  let saved = null
  try {
    saved = JSON.parse(sessionStorage.getItem(FOCUS_KEY) || 'null')
    sessionStorage.removeItem(FOCUS_KEY)
  } catch {}
  if (!saved || saved.at !== location.pathname + location.search) return
  const target = document.querySelector(saved.selector) || (saved.fallback && document.querySelector(saved.fallback))
  if (target) target.focus()
}
function rowSelector(row) {
  const table = row.closest('table')
  return (table && table.id ? '#' + table.id + ' ' : '') + 'tr[data-instance="' + CSS.escape(row.dataset.instance) +
    '"][data-fingerprint="' + CSS.escape(row.dataset.fingerprint) + '"]'
}
document.addEventListener('DOMContentLoaded', () => {
  labelCells()
  restoreFocus()
  const login = document.getElementById('login')
  if (login) {
    login.addEventListener('submit', (e) => {
      e.preventDefault()
      send('POST', '/api/session', { token: login.elements.token.value }).then(() => location.reload(), show)
    })
  }
  const logout = document.getElementById('logout')
  if (logout) logout.addEventListener('click', () => send('DELETE', '/api/session').then(() => location.reload(), show))
  for (const button of document.querySelectorAll('button[data-status]')) {
    button.addEventListener('click', () => {
      const row = button.closest('tr')
      const path = '/api/decisions/' + encodeURIComponent(row.dataset.instance) + '/' + encodeURIComponent(row.dataset.fingerprint)
      const howLong = row.querySelector('select[data-for]')
      const body = { status: button.dataset.status }
      if (howLong && howLong.value) body.expires_in = howLong.value
      send('PUT', path, body).then(() => reloadFocusing(rowSelector(row) + ' button[data-status="' + button.dataset.status + '"]'), show)
    })
  }
  const kill = document.getElementById('kill-switch')
  const setKill = (engaged) =>
    send('PUT', '/api/web-enforcement/kill-switch', { engaged }).then(() => reloadFocusing('#kill-switch'), show)
  // Engaging asks first in a modal <dialog> (views.ts killConfirm): the browser keeps focus in it,
  // closes it on Escape and gives focus back to the button; only its Engage button acts.
  const confirmKill = document.getElementById('kill-confirm')
  if (confirmKill) {
    confirmKill.addEventListener('close', () => {
      if (confirmKill.returnValue === 'engage') setKill(true)
    })
  }
  if (kill) {
    kill.addEventListener('click', () => {
      const engage = kill.dataset.engaged === 'true'
      if (engage && confirmKill) {
        confirmKill.returnValue = ''
        confirmKill.showModal()
      } else {
        setKill(engage)
      }
    })
  }
  const pairPath = (w, g) => '/api/web-pairs/' + encodeURIComponent(w) + '/' + encodeURIComponent(g)
  const pairAdd = document.getElementById('pair-add')
  if (pairAdd) {
    pairAdd.addEventListener('submit', (e) => {
      e.preventDefault()
      const w = pairAdd.elements.websignal_id.value
      const g = pairAdd.elements.tlsgate_id.value
      send('PUT', pairPath(w, g)).then(() => reloadFocusing('#pair-add button[type=submit]'), show)
    })
  }
  for (const button of document.querySelectorAll('button[data-unpair]')) {
    button.addEventListener('click', () => {
      const row = button.closest('tr')
      // The row is gone after the reload: the next pairing's Remove, else the form to add one.
      const next = row.nextElementSibling || row.previousElementSibling
      const selector = next
        ? '#pairs tr[data-websignal="' + CSS.escape(next.dataset.websignal) + '"][data-tlsgate="' + CSS.escape(next.dataset.tlsgate) + '"] button[data-unpair]'
        : '#pair-add button[type=submit]'
      send('DELETE', pairPath(row.dataset.websignal, row.dataset.tlsgate)).then(() => reloadFocusing(selector, '#pair-add button[type=submit]'), show)
    })
  }
  for (const form of document.querySelectorAll('form.label')) {
    form.addEventListener('submit', (e) => {
      e.preventDefault()
      const row = form.closest('tr')
      const path = '/api/decisions/' + encodeURIComponent(row.dataset.instance) + '/' + encodeURIComponent(row.dataset.fingerprint)
      send('PUT', path, { label: form.elements.label.value }).then(() => reloadFocusing(rowSelector(row) + ' form.label button'), show)
    })
  }
})
`

export const DASHBOARD_CSS = `
/* Colours are variables so that the dark scheme below changes them all at once; each pair of text
   and background keeps WCAG's 4.5:1 contrast in both schemes (dashboard-views.test.ts checks). */
:root {
  color-scheme: light dark;
  --bg: #fff; --fg: #1d1d1f; --muted: #666; --label: #555; --reasons: #444;
  --line: #ddd; --frame: #ccc; --link: #1a4fa0;
  --ok: #116611; --bad: #aa1111; --warn: #886600;
  --badge: #eee; --badge-auto: #e8e0ff; --would-block: #ffd9d9; --already-blocked: #f1c0c0; --protected: #d6f5d6;
  --danger-bg: #aa1111; --danger-fg: #fff; --danger-line: #800;
  --error-bg: #fee; --error-line: #c66; --notice-bg: #fff6d6; --notice-line: #d9b84a;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #16181b; --fg: #e6e8eb; --muted: #a3abb5; --label: #a9b1bb; --reasons: #b8bfc8;
    --line: #343a42; --frame: #4a515a; --link: #82b1ff;
    --ok: #6fd08c; --bad: #ff8a80; --warn: #e3b54a;
    --badge: #2e333a; --badge-auto: #3b3160; --would-block: #5e2222; --already-blocked: #4d1b1b; --protected: #1f4a29;
    --danger-bg: #b3261e; --danger-fg: #fff; --danger-line: #e06a62;
    --error-bg: #3b1715; --error-line: #a5483f; --notice-bg: #3a3112; --notice-line: #8a7322;
  }
}
body { font: 14px/1.4 system-ui, sans-serif; margin: 0 1.5rem 1.5rem; color: var(--fg); background: var(--bg); }
a { color: var(--link); }
h1 { font-size: 1.4rem; } h2 { font-size: 1.1rem; margin-top: 2rem; }
.skip { position: absolute; left: -999px; } .skip:focus { left: 1rem; top: .5rem; background: var(--bg); padding: .3rem; z-index: 2; }
header { gap: 1rem; flex-wrap: wrap; border-bottom: 1px solid var(--line); padding: .6rem 0; position: sticky; top: 0; background: var(--bg); z-index: 1; }
.brand { font-weight: 700; color: var(--fg); text-decoration: none; }
nav ul { list-style: none; display: flex; flex-wrap: wrap; gap: .2rem 1rem; margin: 0; padding: 0; }
nav a { text-decoration: none; color: var(--link); padding: .2rem 0; } nav a[aria-current=page] { font-weight: 700; border-bottom: 2px solid var(--link); }
a:focus-visible, button:focus-visible, select:focus-visible, input:focus-visible, summary:focus-visible { outline: 3px solid var(--link); outline-offset: 2px; }
button { font: inherit; padding: .2rem .6rem; margin: .1rem 0; cursor: pointer; }
button.danger { background: var(--danger-bg); color: var(--danger-fg); border: 1px solid var(--danger-line); }
.table-wrap { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; }
.filters { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: end; margin: .5rem 0; }
.panel { border: 1px solid var(--frame); border-radius: 6px; padding: .2rem 1rem 1rem; max-width: 44rem; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; } dt { color: var(--label); } dd { margin: 0; }
.badge { display: inline-block; font-size: 12px; padding: 0 .4rem; border-radius: 3px; background: var(--badge); color: var(--fg); }
.badge.auto { background: var(--badge-auto); } .shadow-would_block { background: var(--would-block); } .shadow-already_blocked { background: var(--already-blocked); }
.shadow-protected { background: var(--protected); } .shadow-insufficient_evidence { background: var(--badge); }
.mode-enforce { color: var(--bad); } .mode-canary { color: var(--warn); } .mode-disabled { color: var(--label); }
ul.reasons { margin: .2rem 0 0; padding-left: 1rem; font-size: 12px; color: var(--reasons); }
td.actions { min-width: 8rem; }
td.actions button, td.actions select, td.actions input { display: block; width: 100%; box-sizing: border-box; }
details summary { cursor: pointer; color: var(--link); }
details pre { margin-top: .3rem; }
select[data-for] { display: block; max-width: 100%; margin-bottom: .3rem; }
time { white-space: nowrap; font-size: 13px; }
#candidates code, #decisions code, #fingerprints code { word-break: break-all; }
#candidates td:first-child, #decisions td:first-child { white-space: nowrap; }
.panel h2 { margin-top: 1rem; }
pre.ips { white-space: pre; word-break: normal; }
th, td { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
code { font-size: 12px; }
.status-approved { color: var(--ok); font-weight: 600; } .status-blocked { color: var(--bad); font-weight: 600; }
.status-pending, .status-none { color: var(--warn); }
.node-silent { color: var(--warn); font-weight: 600; } .node-disabled { color: var(--bad); }
.cert-soon { color: var(--warn); font-weight: 600; } .cert-expired { color: var(--bad); font-weight: 600; }
#error { background: var(--error-bg); border: 1px solid var(--error-line); padding: .5rem; }
.notice { background: var(--notice-bg); border: 1px solid var(--notice-line); padding: .5rem; margin-top: 1rem; }
.notice code { overflow-wrap: anywhere; }
.table-wrap:has(+ p.empty) { display: none; }
.empty-state { border: 1px dashed var(--frame); border-radius: 6px; padding: 0 1rem .6rem; margin-top: 1rem; max-width: 44rem; }
.empty-state h2 { font-size: 1rem; margin: .8rem 0 .4rem; }
.empty-state p, .empty-state ul { margin: .4rem 0; } .empty-state ul { padding-left: 1.2rem; }
.empty-state code { overflow-wrap: anywhere; }
dialog { background: var(--bg); color: var(--fg); border: 1px solid var(--frame); border-radius: 6px; padding: .2rem 1.2rem 1rem; max-width: min(32rem, calc(100vw - 3rem)); }
dialog::backdrop { background: rgb(0 0 0 / .55); }
dialog h2 { margin-top: 1rem; }
.dialog-actions { display: flex; flex-wrap: wrap; gap: .6rem; justify-content: flex-end; margin-top: 1rem; }
header { display: flex; justify-content: space-between; align-items: center; }
@media (max-width: 40rem) {
  body { margin: 0 .6rem .6rem; } td, th { padding: .25rem .3rem; }
  /* A sticky header of three rows took a fifth of a phone's screen on every view: here it is two
     rows (name and sign-out, then the menu) and scrolls away with the page. */
  header { position: static; display: grid; grid-template-columns: 1fr auto; gap: .3rem .6rem; padding: .4rem 0; }
  header nav { grid-column: 1 / -1; grid-row: 2; }
  nav ul { gap: .1rem .8rem; }
  .who { font-size: 13px; }
  .who button { padding: .1rem .5rem; margin: 0; }
  table.cards > thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); }
  table.cards, table.cards > tbody, table.cards > tbody > tr { display: block; }
  table.cards > tbody > tr { border: 1px solid var(--frame); border-radius: 6px; margin: 0 0 .6rem; padding: .3rem .6rem; }
  table.cards > tbody > tr > td { display: flow-root; border: 0; padding: .15rem 0 .15rem 6.8rem; }
  table.cards > tbody > tr > td::before { content: attr(data-label); float: left; width: 6.3rem; margin-left: -6.8rem; color: var(--label); font-size: 14px; font-weight: 400; }
  table.cards > tbody > tr > td[data-label=""] { padding-left: 0; }
  table.cards > tbody > tr > td[data-label=""]::before { content: none; }
  #candidates td:first-child, #decisions td:first-child { white-space: normal; }
  table.cards > tbody > tr > td code { overflow-wrap: anywhere; }
}
.muted { color: var(--muted); font-size: 12px; }
.sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
.lead { max-width: 48rem; }
.report { margin-top: 1.2rem; max-width: 60rem; }
dl.counts { grid-template-columns: repeat(auto-fill, minmax(7rem, max-content) minmax(4rem, max-content)); margin: 0; }
caption { text-align: left; color: var(--label); padding: .3rem 0; }
pre { white-space: pre-wrap; word-break: break-all; max-width: 22rem; margin: 0; }
`
