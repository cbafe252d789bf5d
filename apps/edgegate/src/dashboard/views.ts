/** Dashboard views beyond the overview: decisions with filters, web candidates and enforcement, signals. */
import type { DecisionRow, SignalRow } from '../db/schema.ts'
import { toDecision } from '../decisions/service.ts'
import type { enforcementStatus } from '../enforcement/routes.ts'
import type { candidateJson } from '../web/routes.ts'
import { chrome, type Html, html, layout, type SignedIn, time } from './html.ts'
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
<p class="muted">${rows.length} decision(s), newest first (at most 500).</p>
<div class="table-wrap"><table id="decisions"><thead><tr><th>Instance</th><th>Fingerprint</th><th>Status</th><th>Source</th><th>Label</th><th>Updated</th><th>Actor</th><th></th></tr></thead><tbody>
${rows.map((r) => {
  const d = toDecision(r)
  return html`<tr data-instance="${d.scope_id}" data-fingerprint="${d.fingerprint}" data-source="${r.source}">
<td>${d.scope_id}</td><td><code>${d.fingerprint}</code></td><td class="status-${d.status}">${d.status}</td>${sourceCell(r, now)}
<td>${d.label}</td><td>${time(d.updated_at)}</td><td>${d.actor}</td><td class="actions">${verdictButtons()}</td></tr>`
})}
</tbody></table></div>`,
    ),
  )
}

type Status = Awaited<ReturnType<typeof enforcementStatus>>
type CandidateJson = ReturnType<typeof candidateJson>

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
    : html`<button type="button" id="kill-switch" class="danger" data-engaged="true">Engage the kill switch (revoke every automated block)</button>`
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

export function webPage(
  admin: SignedIn,
  status: Status,
  report: { from: string; to: string; window_seconds: number; candidates: CandidateJson[]; truncated: boolean },
  window: string,
): string {
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
<p class="muted">Signals observed ${time(report.from)} – ${time(report.to)}, matched with TLS sightings of the same client IP and host within five minutes. ${report.candidates.length} candidate(s)${report.truncated ? ' (truncated)' : ''}. Simulation only: a shadow verdict never blocks.</p>
<div class="table-wrap"><table id="candidates"><thead><tr><th>Gate</th><th>TLS fingerprint</th><th>Shadow verdict</th><th>Signals</th><th>Networks</th><th>Sites and nodes</th><th>First / last</th><th>Decision</th><th>Covered</th><th></th></tr></thead><tbody>
${report.candidates.map(candidateRow)}
</tbody></table></div>`,
    ),
  )
}

export function signalsPage(admin: SignedIn, rows: SignalRow[]): string {
  return layout(
    'edgegate: signals',
    chrome(
      admin,
      '/signals',
      html`<h1>Web signals</h1>
<p class="muted">The ${rows.length} newest signals. Aggregates only: no request target or user agent is ever stored.</p>
<div class="table-wrap"><table id="signals"><thead><tr><th>Observed</th><th>Node</th><th>Host</th><th>Site</th><th>Client IP</th><th>Trigger</th><th>Connections</th><th>Errors</th><th>Successes</th><th>Window</th></tr></thead><tbody>
${rows.map(
  (s) =>
    html`<tr><td>${time(Number(s.observed_ms))}</td><td>${s.instance_id}</td><td>${s.host}</td><td>${s.site}</td><td>${s.ip}</td><td>${s.trigger}</td><td>${s.connections}</td><td>${s.errors}</td><td>${s.successes}</td><td>${s.window_seconds}s</td></tr>`,
)}
</tbody></table></div>`,
    ),
  )
}
