// HA status of both peers side by side (GET /v1/status/ha: this node, and the peer as fetched from
// its metrics listener), the HA events, and promotion of a secondary (POST /v1/ha/promote, which
// the API refuses while the old primary is still writable). Refreshes itself while open.
import { api, confirmDialog, count, errorBox, h, notice, table, when } from '../lib.js'

const REFRESH_MS = 10_000

function yesNo(v, yes = 'yes', no = 'no') {
  return v === null || v === undefined
    ? h('span', { class: 'muted' }, 'unknown')
    : h('span', { class: v ? 'ok' : 'bad' }, v ? yes : no)
}

function nodeCard(title, s, extra = []) {
  const row = (label, ...value) => h('div', { class: 'kv' }, h('dt', {}, label), h('dd', {}, ...value))
  if (!s)
    return h(
      'section',
      { class: 'card', 'aria-label': title },
      h('h2', {}, title),
      ...extra,
      h('p', { class: 'muted' }, 'No status.'),
    )
  const rep = s.replication
  return h(
    'section',
    { class: 'card', 'aria-label': title },
    h(
      'h2',
      {},
      title,
      ' ',
      h('span', { class: `badge ${s.write_mode === 'read-write' ? 'ok' : 'warn'}` }, `${s.role} · ${s.write_mode}`),
    ),
    ...extra,
    h(
      'dl',
      {},
      row('Role', s.role, s.epoch ? ` (epoch ${s.epoch})` : ''),
      row('Write mode', s.write_mode, s.read_only_reason ? h('div', { class: 'muted' }, s.read_only_reason) : ''),
      row('Role changed', when(s.role_changed_at)),
      row(
        'VIP',
        s.vip.address
          ? [
              s.vip.address,
              ' ',
              yesNo(s.vip.owned, 'owned here', 'not here'),
              s.vip.interface ? ` on ${s.vip.interface}` : '',
            ]
          : h('span', { class: 'muted' }, 'none configured'),
        s.vip.error ? h('div', { class: 'bad' }, s.vip.error) : '',
      ),
      row(
        'Replication',
        h(
          'span',
          { class: rep.state === 'in_sync' ? 'ok' : rep.state === 'not_configured' ? 'muted' : 'bad' },
          rep.state.replaceAll('_', ' '),
        ),
        ` · ${rep.zones_in_sync}/${count(rep.zones.length, 'zone')} in sync, max lag ${rep.max_lag_seconds} s`,
        rep.error ? h('div', { class: 'bad' }, rep.error) : '',
      ),
      row('Zone snapshot', `${count(s.snapshot.zones, 'zone')}, last `, when(s.snapshot.last_at)),
    ),
    rep.zones.length
      ? table(
          '',
          ['Zone', 'Primary serial', 'Secondary serial', 'In sync', 'Lag'],
          rep.zones.map((z) => [
            z.zone,
            String(z.primary_serial ?? '—'),
            String(z.secondary_serial ?? '—'),
            yesNo(z.in_sync),
            z.lag_seconds === null ? '—' : `${z.lag_seconds} s`,
          ]),
          { class: 'replication' },
        )
      : null,
  )
}

function peerExtra(peer) {
  if (!peer) return [h('p', { class: 'muted' }, 'No peer configured (standalone).')]
  return [
    h(
      'p',
      {},
      'API ',
      h('code', {}, peer.api ?? '—'),
      ', knotd ',
      h('code', {}, peer.knot ?? '—'),
      ': ',
      yesNo(peer.reachable, 'reachable', 'unreachable'),
      peer.latency_ms === null ? '' : `, ${peer.latency_ms.toFixed(1)} ms`,
      ', checked ',
      when(peer.checked_at),
    ),
    peer.error ? h('p', { class: 'bad' }, peer.error) : null,
  ]
}

export async function render(container) {
  const status = h('div')
  const errors = errorBox()
  const peers = h('div', { class: 'peers' })
  const promote = h('div')
  const events = h('div')
  container.append(h('h1', {}, 'HA status'), status, errors, peers, promote, h('h2', {}, 'HA events'), events)

  function promoteForm(s) {
    if (s.role !== 'secondary') return promote.replaceChildren()
    const reason = h('input', { id: 'promote-reason', placeholder: 'VIP moved to this node', maxlength: 500 })
    const button = h('button', { type: 'submit', class: 'danger' }, 'Promote to primary')
    const form = h(
      'form',
      { class: 'card', 'aria-labelledby': 'promote-title' },
      h('h2', { id: 'promote-title' }, 'Promote this secondary'),
      h(
        'p',
        { class: 'muted' },
        'Refused while the old primary still answers as writable: stop its dnsctl first. Every replicated zone becomes a managed primary zone.',
      ),
      h('div', { class: 'field' }, h('label', { for: 'promote-reason' }, 'Reason (audited)'), reason),
      h('div', { class: 'actions' }, button),
    )
    form.addEventListener('submit', async (e) => {
      e.preventDefault()
      const confirmed = await confirmDialog({
        title: 'Promote this node?',
        message: 'This node becomes the writable primary and takes over every replicated zone.',
        action: 'Promote to primary',
        danger: true,
      })
      if (!confirmed) return
      button.disabled = true
      errors.clear()
      try {
        const { body } = await api('POST', '/v1/ha/promote', reason.value ? { reason: reason.value } : {})
        await load().catch((err) => errors.show(err))
        status.replaceChildren(
          notice(`Promoted: now ${body.role} at epoch ${body.epoch}, ${count(body.zones.length, 'zone')} taken over.`),
          ...body.warnings.map((w) => h('p', { class: 'warn' }, w)),
        )
      } catch (err) {
        errors.show(err)
        button.disabled = false
      }
    })
    promote.replaceChildren(form)
  }

  async function load() {
    let s
    try {
      s = (await api('GET', '/v1/status/ha')).body
    } catch (err) {
      if (err.status === 404 && err.code === 'not_found') {
        peers.replaceChildren(h('p', { class: 'muted' }, 'This dnsctl has no HA status endpoint (GET /v1/status/ha).'))
        return false
      }
      errors.show(err)
      return true
    }
    errors.clear()
    peers.replaceChildren(nodeCard('This node', s), nodeCard('Peer', s.peer?.status ?? null, peerExtra(s.peer)))
    promoteForm(s)
    const ev = (await api('GET', '/v1/ha/events?limit=20')).body.events
    events.replaceChildren(
      ev.length === 0
        ? h('p', { class: 'muted' }, 'No promotions yet.')
        : table(
            '',
            ['When', 'Action', 'Actor', 'Outcome', 'Roles', 'Epoch'],
            ev.map((e) => [when(e.at), e.action, e.actor, e.outcome, `${e.from_role} → ${e.to_role}`, String(e.epoch)]),
          ),
    )
    return true
  }
  if (!(await load())) return
  const timer = setInterval(() => {
    if (!container.isConnected) return clearInterval(timer)
    // Not under the user's hands: a form being filled in, or its confirmation open.
    if (!promote.contains(document.activeElement) && !document.querySelector('dialog[open]')) load()
  }, REFRESH_MS)
}
