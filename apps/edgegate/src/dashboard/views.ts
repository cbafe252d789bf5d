/** Dashboard views beyond the overview: decisions with filters, web candidates and enforcement, signals. */
import type { DecisionRow, SignalRow } from '../db/schema.ts'
import { toDecision } from '../decisions/service.ts'
import type { enforcementStatus } from '../enforcement/routes.ts'
import type { candidateJson } from '../web/routes.ts'
import { chrome, emptyState, type Html, html, layout, type SignedIn, time } from './html.ts'
import { verdictButtons } from './pages.ts'

export interface DecisionFilter {
  instance: string | undefined
  status: string | undefined
  source: string | undefined
}

function option(value: string, label: string, selected: string | undefined): Html {
  return html`<option value="${value}"${selected === value ? html` selected` : ''}>${label}</option>`
}

function sourceCell(d: DecisionRow, now: number): Html {
  const expires = d.expires_ms === null ? undefined : Number(d.expires_ms)
  const state = expires !== undefined && expires <= now ? 'expired' : 'expires'
  const until = expires === undefined ? '' : html`<br><span class="muted">${state} ${time(expires)}</span>`
  if (d.source === 'manual') return html`<td>manual${until}</td>`
  return html`<td><span class="badge auto">automated</span> ${d.source}${until}</td>`
}

/** An empty decision list: filtered to nothing, nothing to decide for yet, or nothing decided yet. */
function noDecisions(gates: string[], f: DecisionFilter): Html {
  if (f.instance || f.status || f.source) {
    const asked = [
      f.instance ? `instance ${f.instance}` : '',
      f.status ? `status ${f.status}` : '',
      f.source ? `source ${f.source}` : '',
    ].filter(Boolean)
    return emptyState(
      'decisions',
      'No decisions match these filters',
      html`<p>Nothing live for ${asked.join(', ')}. <a href="/decisions">Show every decision</a></p>`,
    )
  }
  const what = html`<p>A decision is a verdict (approved, blocked or pending) on one fingerprint a gate saw, for that gate
only; the gate pulls it on its next sync. Decisions made here, on the API or with the CLI are listed here, newest first.</p>`
  if (gates.length === 0)
    return emptyState(
      'decisions',
      'No decisions yet',
      html`${what}<p>No gate is registered to decide for. Register one, and its fingerprints appear on the
<a href="/">overview</a> as it syncs:</p>
<p><code>edgegate node add --kind sshgate edge-ssh-1</code> <span class="muted">(or <code>--kind tlsgate</code>)</span></p>`,
    )
  return emptyState(
    'decisions',
    'No decisions yet',
    html`${what}<p>Decide with the buttons beside a fingerprint on the <a href="/">overview</a> or on
<a href="/web">Web candidates</a>, or from a shell:</p>
<p><code>edgegate decision block --instance ${gates[0]} FINGERPRINT</code></p>
<p class="muted"><code>approve</code> and <code>pending</code> work the same way; <code>--for 24h</code> makes a verdict temporary.</p>`,
  )
}

export function decisionsPage(
  admin: SignedIn,
  rows: DecisionRow[],
  gates: string[],
  f: DecisionFilter,
  now: number,
): string {
  return layout(
    'edgegate: decisions',
    chrome(
      admin,
      '/decisions',
      html`<h1>Decisions</h1>
<form class="filters" method="get" action="/decisions">
<label>Instance <select name="instance">${option('', 'all', f.instance ?? '')}${gates.map((g) => option(g, g, f.instance))}</select></label>
<label>Status <select name="status">${option('', 'all', f.status ?? '')}${['approved', 'blocked', 'pending'].map((s) => option(s, s, f.status))}</select></label>
<label>Source <select name="source">${option('', 'all', f.source ?? '')}${option('manual', 'manual', f.source)}${option('web-controller', 'automated (web controller)', f.source)}</select></label>
<button type="submit">Filter</button>
</form>
${
  rows.length === 0
    ? noDecisions(gates, f)
    : html`<p class="muted">${rows.length} decision(s), newest first (at most 500).</p>
<div class="table-wrap"><table id="decisions"><thead><tr><th>Instance</th><th>Fingerprint</th><th>Status</th><th>Source</th><th>Label</th><th>Updated</th><th>Actor</th><th></th></tr></thead><tbody>
${rows.map((r) => {
  const d = toDecision(r)
  return html`<tr data-instance="${d.scope_id}" data-fingerprint="${d.fingerprint}" data-source="${r.source}">
<td>${d.scope_id}</td><td><code>${d.fingerprint}</code></td><td class="status-${d.status}">${d.status}</td>${sourceCell(r, now)}
<td>${d.label}</td><td>${time(d.updated_at)}</td><td>${d.actor}</td><td class="actions">${verdictButtons()}</td></tr>`
})}
</tbody></table></div>`
}`,
    ),
  )
}

type Status = Awaited<ReturnType<typeof enforcementStatus>>
type CandidateJson = ReturnType<typeof candidateJson>

/**
 * Engaging asks first: it revokes every automated block at once, and releasing does not bring
 * them back (the controller blocks again only on evidence newer than theirs), so a stray click
 * or Enter costs real blocks. Cancel has the focus, so a second stray Enter changes nothing;
 * Escape closes it too. Releasing acts at once: it only lets the controller run again.
 */
function revoked(blocks: number): string {
  if (blocks === 0) return 'No automated block is in force now.'
  const what =
    blocks === 1 ? 'The 1 automated block in force becomes' : `All ${blocks} automated blocks in force become`
  return `${what} pending at once; gates drop ${blocks === 1 ? 'it' : 'them'} on their next pull.`
}

function killConfirm(blocks: number): Html {
  return html`<dialog id="kill-confirm" aria-labelledby="kill-confirm-title" aria-describedby="kill-confirm-text">
<form method="dialog">
<h2 id="kill-confirm-title">Engage the kill switch?</h2>
<div id="kill-confirm-text">
<p>${revoked(blocks)}
No edgegate process makes new automated blocks until the switch is released, and once it is, a revoked block comes back
only with newer evidence. Manual decisions are not touched.</p>
</div>
<div class="dialog-actions">
<button type="submit" value="cancel" autofocus>Cancel</button>
<button type="submit" value="engage" class="danger" id="kill-confirm-engage">Engage the kill switch</button>
</div>
</form>
</dialog>`
}

function enforcementPanel(s: Status): Html {
  const engaged = s.kill_switch.engaged
  return html`<section class="panel" id="enforcement" aria-labelledby="enforcement-title">
<h2 id="enforcement-title">Web enforcement</h2>
<dl>
<dt>Mode in force</dt><dd><strong class="mode-${s.enforcement_mode}" data-testid="mode">${s.enforcement_mode}</strong></dd>
<dt>Configured mode</dt><dd>${s.configured_enforcement_mode}${
    s.canary_nodes.length > 0 ? html` (canary: ${s.canary_nodes.join(', ')})` : ''
  }</dd>
<dt>Shadow policy</dt><dd>${s.shadow_enabled ? 'enabled' : 'disabled'}</dd>
<dt>Automated blocks in force</dt><dd data-testid="automated">${s.automated_blocks}</dd>
<dt>Kill switch</dt><dd data-testid="kill">${engaged ? html`<strong class="status-blocked">engaged</strong>` : 'off'}${
    s.kill_switch.actor
      ? html` <span class="muted">(${s.kill_switch.actor}, ${time(s.kill_switch.updated_at)})</span>`
      : ''
  }</dd>
</dl>
${
  engaged
    ? html`<button type="button" id="kill-switch" data-engaged="false">Release the kill switch</button>`
    : html`<button type="button" id="kill-switch" class="danger" data-engaged="true" aria-haspopup="dialog">Engage the kill switch (revoke every automated block)</button>
${killConfirm(s.automated_blocks)}`
}
</section>`
}

function list(values: string[], count: number): string {
  return count > values.length ? `${values.join(', ')} … (${count})` : values.join(', ')
}

function candidateRow(c: CandidateJson): Html {
  return html`<tr data-instance="${c.instance_id}" data-fingerprint="${c.fingerprint}">
<td>${c.instance_id}</td><td><code>${c.fingerprint}</code></td>
<td>${c.shadow_status ? html`<span class="badge shadow-${c.shadow_status}">${c.shadow_status}</span>` : html`<span class="muted">shadow off</span>`}
${c.shadow_reasons ? html`<ul class="reasons">${c.shadow_reasons.map((r) => html`<li>${r}</li>`)}</ul>` : ''}</td>
<td>${c.signals} signals<br><span class="muted">${c.errors} errors / ${c.successes} ok, ratio ${c.error_ratio}</span></td>
<td>${c.network_count}: <span class="muted">${list(c.networks, c.network_count)}</span></td>
<td>sites: ${list(c.sites, c.site_count)}${c.cross_site ? html` <span class="badge">cross-site</span>` : ''}<br>
nodes: ${list(c.nodes, c.node_count)}${c.cross_node ? html` <span class="badge">cross-node</span>` : ''}</td>
<td>${time(c.first_at)}<br>${time(c.last_at)}</td>
<td>${c.decision ? html`<span class="status-${c.decision.status}">${c.decision.status}</span> <span class="muted">${c.decision.source}${c.decision.expires_at ? html`, expires ${time(c.decision.expires_at)}` : ''}</span>` : 'none'}${
    c.proposed_expires_at ? html`<br><span class="muted">proposed expiry ${time(c.proposed_expires_at)}</span>` : ''
  }</td>
<td>${c.enforcement_covered ? 'yes' : 'no'}</td>
<td class="actions">${verdictButtons()}</td>
</tr>`
}

type Report = { from: string; to: string; window_seconds: number; candidates: CandidateJson[]; truncated: boolean }

/** Registered nodes by kind: what an empty view can tell is missing. */
export interface NodeKinds {
  tlsgate: string[]
  websignal: string[]
}

/** Nodes of a kind, or the command that registers the first one. */
function nodeItem(what: string, ids: string[], add: string): Html {
  return ids.length > 0
    ? html`<li>${what}: ${ids.join(', ')}</li>`
    : html`<li>${what}: none registered yet, <code>${add}</code></li>`
}

/**
 * No candidate in the interval. A candidate needs both halves of the evidence, so the state
 * names each: the nodes that send it (registered or not) and where to look at what arrived.
 */
function noCandidates(report: Report, window: string, nodes: NodeKinds): Html {
  return emptyState(
    'candidates',
    `No candidates in the last ${window}`,
    html`<p>A candidate is a TLS client fingerprint whose sightings on a TLS gate share the client IP and host (the
TLS server name) with web signals (scanner behaviour in an access log) within five minutes; signals observed
${time(report.from)} – ${time(report.to)} are matched. It needs both:</p>
<ul>
${nodeItem('TLS gates sending sightings', nodes.tlsgate, 'edgegate node add --kind tlsgate tls-1')}
${nodeItem('web signal nodes sending signals', nodes.websignal, 'edgegate node add --kind websignal web-1')}
</ul>
<p>What arrived: <a href="/signals">Signals</a>, and the TLS fingerprints on the <a href="/">overview</a>. Clients that send no
server name match only through a <a href="/pairs">pairing</a>.${
      window === '30m' ? '' : html` A longer window: <a href="/web?window=30m">the last 30 minutes</a>.`
    }</p>`,
  )
}

export function webPage(admin: SignedIn, status: Status, report: Report, window: string, nodes: NodeKinds): string {
  return layout(
    'edgegate: web candidates',
    chrome(
      admin,
      '/web',
      html`<h1>Web candidates</h1>
${enforcementPanel(status)}
<h2>Candidates</h2>
<form class="filters" method="get" action="/web">
<label>Window <select name="window">${['5m', '15m', '30m'].map((w) => option(w, w, window))}</select></label>
<button type="submit">Show</button>
</form>
${
  report.candidates.length === 0
    ? noCandidates(report, window, nodes)
    : html`<p class="muted">Signals observed ${time(report.from)} – ${time(report.to)}, matched with TLS sightings of the same client IP and host within five minutes. ${report.candidates.length} candidate(s)${report.truncated ? ' (truncated)' : ''}. Simulation only: a shadow verdict never blocks.</p>
<div class="table-wrap"><table id="candidates"><thead><tr><th>Gate</th><th>TLS fingerprint</th><th>Shadow verdict</th><th>Signals</th><th>Networks</th><th>Sites and nodes</th><th>First / last</th><th>Decision</th><th>Covered</th><th></th></tr></thead><tbody>
${report.candidates.map(candidateRow)}
</tbody></table></div>`
}`,
    ),
  )
}

/** No signal stored: what sends them, and whether anything is registered to. */
function noSignals(websignal: string[]): Html {
  return emptyState(
    'signals',
    'No web signals yet',
    html`<p>A web signal node (<code>websignal</code>) reads a web server's access log and sends a signal when a client
behaves like a scanner: failing requests for paths such as <code>/.env</code> or <code>/wp-login.php</code>. Only
aggregates arrive (host, site, client IP, counts); signals are kept for <code>--signal-retention</code> (8 days by default).</p>
${
  websignal.length === 0
    ? html`<p>No web signal node is registered. Register one and give the agent its token (its config's
<code>control_plane</code> section):</p>
<p><code>edgegate node add --kind websignal web-1</code></p>`
    : html`<p>Registered: ${websignal.join(', ')}. None has sent a signal that is still kept; on the agent's host,
<code>websignal status</code> says whether it publishes.</p>`
}`,
  )
}

export function signalsPage(admin: SignedIn, rows: SignalRow[], websignal: string[]): string {
  return layout(
    'edgegate: signals',
    chrome(
      admin,
      '/signals',
      html`<h1>Web signals</h1>
${
  rows.length === 0
    ? noSignals(websignal)
    : html`<p class="muted">The ${rows.length} newest signals. Aggregates only: no request target or user agent is ever stored.</p>
<div class="table-wrap"><table id="signals"><thead><tr><th>Observed</th><th>Node</th><th>Host</th><th>Site</th><th>Client IP</th><th>Trigger</th><th>Connections</th><th>Errors</th><th>Successes</th><th>Window</th></tr></thead><tbody>
${rows.map(
  (s) =>
    html`<tr><td>${time(Number(s.observed_ms))}</td><td>${s.instance_id}</td><td>${s.host}</td><td>${s.site}</td><td>${s.ip}</td><td>${s.trigger}</td><td>${s.connections}</td><td>${s.errors}</td><td>${s.successes}</td><td>${s.window_seconds}s</td></tr>`,
)}
</tbody></table></div>`
}`,
    ),
  )
}
