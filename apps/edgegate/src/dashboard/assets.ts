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
  if (box) { box.textContent = err.message; box.hidden = false }
}
document.addEventListener('DOMContentLoaded', () => {
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
      send('PUT', path, { status: button.dataset.status }).then(() => location.reload(), show)
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
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5rem; color: #1d1d1f; }
h1 { font-size: 1.4rem; } h2 { font-size: 1.1rem; margin-top: 2rem; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid #ddd; vertical-align: top; }
code { font-size: 12px; }
.status-approved { color: #116611; font-weight: 600; } .status-blocked { color: #aa1111; font-weight: 600; }
.status-pending, .status-none { color: #886600; }
#error { background: #fee; border: 1px solid #c66; padding: .5rem; }
header { display: flex; justify-content: space-between; align-items: center; }
.muted { color: #666; font-size: 12px; }
pre { white-space: pre-wrap; word-break: break-all; max-width: 22rem; margin: 0; }
`
