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
document.addEventListener('DOMContentLoaded', () => {
  labelCells()
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
      send('PUT', path, body).then(() => location.reload(), show)
    })
  }
  const kill = document.getElementById('kill-switch')
  if (kill) {
    kill.addEventListener('click', () => {
      send('PUT', '/api/web-enforcement/kill-switch', { engaged: kill.dataset.engaged === 'true' }).then(() => location.reload(), show)
    })
  }
  const pairPath = (w, g) => '/api/web-pairs/' + encodeURIComponent(w) + '/' + encodeURIComponent(g)
  const pairAdd = document.getElementById('pair-add')
  if (pairAdd) {
    pairAdd.addEventListener('submit', (e) => {
      e.preventDefault()
      send('PUT', pairPath(pairAdd.elements.websignal_id.value, pairAdd.elements.tlsgate_id.value)).then(() => location.reload(), show)
    })
  }
  for (const button of document.querySelectorAll('button[data-unpair]')) {
    button.addEventListener('click', () => {
      const row = button.closest('tr')
      send('DELETE', pairPath(row.dataset.websignal, row.dataset.tlsgate)).then(() => location.reload(), show)
    })
  }
  for (const form of document.querySelectorAll('form.label')) {
    form.addEventListener('submit', (e) => {
      e.preventDefault()
      const row = form.closest('tr')
      const path = '/api/decisions/' + encodeURIComponent(row.dataset.instance) + '/' + encodeURIComponent(row.dataset.fingerprint)
      send('PUT', path, { label: form.elements.label.value }).then(() => location.reload(), show)
    })
  }
})
`

export const DASHBOARD_CSS = `
body { font: 14px/1.4 system-ui, sans-serif; margin: 0 1.5rem 1.5rem; color: #1d1d1f; }
h1 { font-size: 1.4rem; } h2 { font-size: 1.1rem; margin-top: 2rem; }
.skip { position: absolute; left: -999px; } .skip:focus { left: 1rem; top: .5rem; background: #fff; padding: .3rem; z-index: 2; }
header { gap: 1rem; flex-wrap: wrap; border-bottom: 1px solid #ddd; padding: .6rem 0; position: sticky; top: 0; background: #fff; z-index: 1; }
nav ul { list-style: none; display: flex; flex-wrap: wrap; gap: .2rem 1rem; margin: 0; padding: 0; }
nav a { text-decoration: none; color: #1a4fa0; padding: .2rem 0; } nav a[aria-current=page] { font-weight: 700; border-bottom: 2px solid #1a4fa0; }
a:focus-visible, button:focus-visible, select:focus-visible, input:focus-visible { outline: 3px solid #1a4fa0; outline-offset: 2px; }
button { font: inherit; padding: .2rem .6rem; margin: .1rem 0; cursor: pointer; }
button.danger { background: #aa1111; color: #fff; border: 1px solid #800; }
.table-wrap { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; }
.filters { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: end; margin: .5rem 0; }
.panel { border: 1px solid #ccc; border-radius: 6px; padding: .2rem 1rem 1rem; max-width: 44rem; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; } dt { color: #555; } dd { margin: 0; }
.badge { display: inline-block; font-size: 12px; padding: 0 .4rem; border-radius: 3px; background: #eee; }
.badge.auto { background: #e8e0ff; } .shadow-would_block { background: #ffd9d9; } .shadow-already_blocked { background: #f1c0c0; }
.shadow-protected { background: #d6f5d6; } .shadow-insufficient_evidence { background: #eee; }
.mode-enforce { color: #aa1111; } .mode-canary { color: #886600; } .mode-disabled { color: #555; }
ul.reasons { margin: .2rem 0 0; padding-left: 1rem; font-size: 12px; color: #444; }
td.actions { min-width: 8rem; }
td.actions button, td.actions select, td.actions input { display: block; width: 100%; box-sizing: border-box; }
details summary { cursor: pointer; color: #1a4fa0; }
details pre { margin-top: .3rem; }
select[data-for] { display: block; max-width: 100%; margin-bottom: .3rem; }
time { white-space: nowrap; font-size: 13px; }
#candidates code, #decisions code, #fingerprints code { word-break: break-all; }
#candidates td:first-child, #decisions td:first-child { white-space: nowrap; }
.panel h2 { margin-top: 1rem; }
pre.ips { white-space: pre; word-break: normal; }
th, td { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid #ddd; vertical-align: top; }
code { font-size: 12px; }
.status-approved { color: #116611; font-weight: 600; } .status-blocked { color: #aa1111; font-weight: 600; }
.status-pending, .status-none { color: #886600; }
.node-silent { color: #886600; font-weight: 600; } .node-disabled { color: #aa1111; }
.cert-soon { color: #886600; font-weight: 600; } .cert-expired { color: #aa1111; font-weight: 600; }
#error { background: #fee; border: 1px solid #c66; padding: .5rem; }
.notice { background: #fff6d6; border: 1px solid #d9b84a; padding: .5rem; margin-top: 1rem; }
.notice code { overflow-wrap: anywhere; }
.table-wrap:has(+ p.empty) { display: none; }
header { display: flex; justify-content: space-between; align-items: center; }
@media (max-width: 40rem) {
  body { margin: 0 .6rem .6rem; } td, th { padding: .25rem .3rem; }
  table.cards > thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); }
  table.cards, table.cards > tbody, table.cards > tbody > tr { display: block; }
  table.cards > tbody > tr { border: 1px solid #ccc; border-radius: 6px; margin: 0 0 .6rem; padding: .3rem .6rem; }
  table.cards > tbody > tr > td { display: flow-root; border: 0; padding: .15rem 0 .15rem 6.8rem; }
  table.cards > tbody > tr > td::before { content: attr(data-label); float: left; width: 6.3rem; margin-left: -6.8rem; color: #555; font-size: 14px; font-weight: 400; }
  table.cards > tbody > tr > td[data-label=""] { padding-left: 0; }
  table.cards > tbody > tr > td[data-label=""]::before { content: none; }
  #candidates td:first-child, #decisions td:first-child { white-space: normal; }
  table.cards > tbody > tr > td code { overflow-wrap: anywhere; }
}
.muted { color: #666; font-size: 12px; }
.sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
.lead { max-width: 48rem; }
.report { margin-top: 1.2rem; max-width: 60rem; }
dl.counts { grid-template-columns: repeat(auto-fill, minmax(7rem, max-content) minmax(4rem, max-content)); margin: 0; }
caption { text-align: left; color: #555; padding: .3rem 0; }
pre { white-space: pre-wrap; word-break: break-all; max-width: 22rem; margin: 0; }
`
