/** Dashboard pages: sign-in, and the overview of nodes, fingerprints, decisions and SMTP reports. */
import type { Decision, SmtpReport } from '@gatehouse/kit'
import { EXPIRY_WARN_MS } from '@gatehouse/kit/certificate-expiry.ts'
import type { NodeRow } from '../db/schema.ts'
import { describeNode } from '../nodes/service.ts'
import type { Aggregate } from '../observations/merge.ts'
import { formatMillis } from '../timestamps.ts'
import { chrome, type Html, html, layout, type SignedIn, time } from './html.ts'

export function signInPage(): string {
  return layout(
    'edgegate: sign in',
    html`<h1>edgegate</h1>
<p>Sign in with an administrator token (<code>edgegate admin add NAME</code> prints one).</p>
<p id="error" role="alert" hidden></p>
<form id="login">
<label>Administrator token <input name="token" type="password" autocomplete="off" required></label>
<button type="submit">Sign in</button>
</form>`,
  )
}

export interface Overview {
  admin: SignedIn
  /** Show only this instance's fingerprints and decisions. */
  instance: string | undefined
  nodes: NodeRow[]
  fingerprints: Array<{ instance_id: string; aggregate: Aggregate; decision: Decision | undefined }>
  decisions: Decision[]
  reports: Array<SmtpReport & { received_at: string }>
}

function statusCell(decision: Decision | undefined): Html {
  const status = decision?.status ?? 'none'
  return html`<td class="status-${status}" data-testid="decision">${decision ? status : 'no decision'}${
    decision?.expires_at ? html`<br><span class="muted">until ${time(decision.expires_at)}</span>` : ''
  }</td>`
}

/**
 * Verdict buttons of a row carrying data-instance and data-fingerprint (dashboard.js sends
 * them), after a choice of how long the verdict holds (a temporary ban, temporary access).
 */
export function verdictButtons(): Html {
  return html`<select data-for aria-label="for how long">${[
    ['', 'permanent'],
    ['1h', 'for 1 hour'],
    ['24h', 'for 24 hours'],
    ['168h', 'for 7 days'],
  ].map(([value, text]) => html`<option value="${value}">${text}</option>`)}</select>
<button type="button" data-status="approved">Approve</button>
<button type="button" data-status="blocked">Block</button>
<button type="button" data-status="pending">Pending</button>`
}

function fingerprintRow(f: Overview['fingerprints'][number]): Html {
  const a = f.aggregate
  const shown = Math.min(a.sightings.length, 5)
  const sightings = a.sightings
    .slice(0, shown)
    .map((s) => `${s.ip} :${s.port} @ ${formatMillis(s.last_seen_ms)}`)
    .join('\n')
  const meta = Object.entries(a.metadata)
    .map(([k, v]) => `${k}=${v.length > 80 ? `${v.slice(0, 80)}…` : v}`)
    .join('\n')
  return html`<tr data-instance="${f.instance_id}" data-fingerprint="${a.fingerprint}">
<td>${f.instance_id}</td>
<td><code>${a.fingerprint}</code></td>
${statusCell(f.decision)}
<td>${f.decision?.label ?? ''}</td>
<td>${a.reported_status}</td>
<td>${a.count}</td>
<td>${time(a.first_seen_ms)}<br>${time(a.last_seen_ms)}</td>
<td><pre class="muted ips">${a.ips.slice(0, 8).join('\n')}</pre></td>
<td><details><summary>${shown} recent sighting${shown === 1 ? '' : 's'}, metadata</summary>
<pre class="muted">${sightings}</pre>
<pre class="muted">${meta}</pre>
</details></td>
<td class="actions">
${verdictButtons()}
<form class="label"><input name="label" value="${f.decision?.label ?? ''}" aria-label="label"><button type="submit">Save label</button></form>
</td>
</tr>`
}

/** A node's client-certificate expiry: marked within the 14 days the health pass warns about, and once expired. */
function certificateCell(at: string | null, now: number): Html {
  if (at === null) return html`<td class="muted">–</td>`
  const left = Date.parse(at) - now
  if (left <= 0) return html`<td class="cert-expired">${time(at)} (expired)</td>`
  if (left < EXPIRY_WARN_MS)
    return html`<td class="cert-soon">${time(at)} (${Math.floor(left / 86_400_000)} days left)</td>`
  return html`<td>${time(at)}</td>`
}

/** What an empty table of the overview says instead of a row of headings with nothing under them. */
function empty(rows: unknown[], table: string, text: string | Html): Html {
  return rows.length === 0 ? html`<p class="muted empty" data-empty="${table}">${text}</p>` : html``
}

export function overviewPage(o: Overview): string {
  const nodes = o.nodes.map(describeNode)
  const now = Date.now()
  return layout(
    'edgegate',
    chrome(
      o.admin,
      '/',
      html`<h1>Control plane overview</h1>
<h2>Nodes</h2>
<div class="table-wrap"><table id="nodes"><thead><tr><th>Instance</th><th>Kind</th><th>State</th><th>Auth</th><th>Last seen</th><th>Certificate expires</th></tr></thead><tbody>
${nodes.map((n) => html`<tr><td><a href="/?instance=${encodeURIComponent(n.instance_id)}">${n.instance_id}</a></td><td>${n.kind}</td><td class="node-${n.state}">${n.state === 'silent' ? 'silent (not heard from for 10 min)' : n.state}</td><td>${n.auth}</td><td>${n.last_seen_at ? time(n.last_seen_at) : 'never'}</td>${certificateCell(n.certificate_expires_at, now)}</tr>`)}
</tbody></table></div>
${empty(nodes, 'nodes', html`No nodes registered yet: <code>edgegate node add</code> registers one.`)}
<h2>Fingerprints${o.instance === undefined ? '' : html` of ${o.instance} <a href="/" class="muted">(all instances)</a>`}</h2>
<div class="table-wrap"><table id="fingerprints"><thead><tr><th>Instance</th><th>Fingerprint</th><th>Decision</th><th>Label</th><th>Gate reports</th><th>Count</th><th>First / last seen</th><th>IPs</th><th>Details</th><th><span class="sr">Actions</span></th></tr></thead><tbody>
${o.fingerprints.map(fingerprintRow)}
</tbody></table></div>
${empty(o.fingerprints, 'fingerprints', o.instance === undefined ? 'No fingerprints observed yet: gates report what they see on their next sync.' : html`No fingerprints observed on ${o.instance} yet.`)}
<h2>Recent decisions${o.instance === undefined ? '' : html` of ${o.instance}`} <a href="/decisions" class="muted">(all, with filters)</a></h2>
<div class="table-wrap"><table id="recent"><thead><tr><th>Instance</th><th>Fingerprint</th><th>Status</th><th>Label</th><th>Updated</th><th>Actor</th></tr></thead><tbody>
${o.decisions.map((d) => html`<tr><td>${d.scope_id}</td><td><code>${d.fingerprint}</code></td>${statusCell(d)}<td>${d.label}</td><td>${time(d.updated_at)}</td><td>${d.actor}</td></tr>`)}
</tbody></table></div>
${empty(
  o.decisions,
  'decisions',
  // Narrowed to one instance, "no decisions yet" read as if there were none anywhere.
  o.instance === undefined
    ? 'No decisions yet: approve or block a fingerprint above.'
    : html`No decisions for ${o.instance} yet.`,
)}
<h2>SMTP reports</h2>
<div class="table-wrap"><table id="smtp"><thead><tr><th>Node</th><th>Namespace</th><th>Listener</th><th>Generated</th><th>Coverage</th><th>Counts</th><th>Evidence</th></tr></thead><tbody>
${o.reports.map(
  (r) =>
    html`<tr><td>${r.instance_id}</td><td>${r.namespace}</td><td>${r.listener}</td><td>${r.generated_at}</td><td>${r.coverage.from} – ${r.coverage.to}</td><td>${Object.entries(
      r.counts,
    )
      .map(([k, v]) => `${k}: ${v}`)
      .join(', ')}</td><td>${r.evidence.length} item(s)</td></tr>`,
)}
</tbody></table></div>
${empty(o.reports, 'smtp', 'No SMTP reports yet: SMTP gates send one per namespace and listener.')}`,
    ),
  )
}
