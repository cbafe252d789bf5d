/** Dashboard views for node pairings (list, add, remove) and SMTP report summaries. */
import type { SmtpReport } from '@gatehouse/kit/edge-wire.ts'
import type { NodeRow } from '../db/schema.ts'
import type { Pair } from '../web/pair-store.ts'
import { chrome, emptyState, type Html, html, layout, type SignedIn, time } from './html.ts'

/** Evidence rows shown per SMTP report (largest counts first); the rest are counted. */
const EVIDENCE_SHOWN = 10

export function pairsPage(admin: SignedIn, pairs: Pair[], nodes: NodeRow[]): string {
  const web = nodes.filter((n) => n.kind === 'websignal' || n.kind === 'log_watcher').map((n) => n.instance_id)
  const gates = nodes.filter((n) => n.kind === 'tlsgate').map((n) => n.instance_id)
  const select = (name: string, label: string, ids: string[]) =>
    html`<label>${label} <select name="${name}" required>${ids.map((id) => html`<option value="${id}">${id}</option>`)}</select></label>`
  return layout(
    'edgegate: pairings',
    chrome(
      admin,
      '/pairs',
      html`<h1>Pairings</h1>
<p class="lead">A web signal node paired with a TLS gate has its signals matched with every sighting of that gate
for the same client address within five minutes, whatever the TLS server name (for clients that send no SNI,
or a site the TLS gate knows by another name). Without a pairing, a signal matches sightings whose SNI is its host.</p>
${
  web.length === 0 || gates.length === 0
    ? html`<p class="muted" id="pair-hint">Pairing needs a registered websignal node and a tlsgate node (edgegate node add --kind …).</p>`
    : html`<form id="pair-add" class="filters" aria-label="Add a pairing">
${select('websignal_id', 'Web signal node', web)}
${select('tlsgate_id', 'TLS gate', gates)}
<button type="submit">Pair</button>
</form>`
}
<div class="table-wrap"><table id="pairs"><thead><tr><th>Web signal node</th><th>TLS gate</th><th>Added by</th><th>Since</th><th></th></tr></thead><tbody>
${pairs.map(
  (p) => html`<tr data-websignal="${p.websignal_id}" data-tlsgate="${p.tlsgate_id}">
<td>${p.websignal_id}</td><td>${p.tlsgate_id}</td><td>${p.actor}</td><td>${time(p.created_at)}</td>
<td class="actions"><button type="button" data-unpair>Remove <span class="sr">pairing ${p.websignal_id} with ${p.tlsgate_id}</span></button></td></tr>`,
)}
</tbody></table></div>
${pairs.length === 0 ? html`<p class="muted">No pairings yet.</p>` : ''}`,
    ),
  )
}

type Report = SmtpReport & { received_at: string }

function countList(counts: Record<string, number>): Html {
  const entries = Object.entries(counts).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  if (entries.length === 0) return html`<span class="muted">none</span>`
  return html`<dl class="counts">${entries.map(([k, v]) => html`<dt>${k}</dt><dd>${v.toLocaleString('en')}</dd>`)}</dl>`
}

function reportSection(r: Report, i: number): Html {
  const evidence = [...r.evidence].sort((a, b) => b.count - a.count)
  const shown = evidence.slice(0, EVIDENCE_SHOWN)
  return html`<section class="panel report" aria-labelledby="smtp-${i}" data-node="${r.instance_id}">
<h2 id="smtp-${i}">${r.instance_id} <span class="muted">${r.namespace} · ${r.listener}</span></h2>
<dl>
<dt>Covers</dt><dd>${time(r.coverage.from)} – ${time(r.coverage.to)}</dd>
<dt>Generated</dt><dd>${time(r.generated_at)} <span class="muted">(received ${time(r.received_at)})</span></dd>
<dt>Counts</dt><dd>${countList(r.counts)}</dd>
</dl>
${
  shown.length === 0
    ? html`<p class="muted">No evidence items.</p>`
    : html`<div class="table-wrap"><table class="evidence"><caption>Evidence, largest counts first${
        evidence.length > shown.length ? html` (${shown.length} of ${evidence.length})` : ''
      }</caption><thead><tr><th>Kind</th><th>Client</th><th>Fingerprint</th><th>Count</th><th>Last seen</th></tr></thead><tbody>
${shown.map(
  (e) =>
    html`<tr><td>${e.kind}</td><td>${e.ip ?? ''}</td><td>${e.fingerprint ? html`<code>${e.fingerprint}</code>` : ''}</td><td>${e.count.toLocaleString('en')}</td><td>${time(e.last_seen)}</td></tr>`,
)}
</tbody></table></div>`
}
</section>`
}

export function smtpPage(admin: SignedIn, reports: Report[]): string {
  const totals: Record<string, number> = {}
  for (const r of reports) for (const [k, v] of Object.entries(r.counts)) totals[k] = (totals[k] ?? 0) + v
  const nodes = new Set(reports.map((r) => r.instance_id)).size
  return layout(
    'edgegate: SMTP reports',
    chrome(
      admin,
      '/smtp',
      html`<h1>SMTP reports</h1>
<p class="lead">The newest report of each SMTP gate, namespace and listener. Reports are evidence for people: they never change
decisions or what gates pull.</p>
<section class="panel" aria-labelledby="smtp-totals" id="smtp-summary">
<h2 id="smtp-totals">All reports</h2>
<p>${reports.length} report(s) from ${nodes} node(s).</p>
${countList(totals)}
</section>
${reports.map(reportSection)}`,
    ),
  )
}

export interface AuditEntry {
  at_ms: number | string
  actor: string
  action: string
  target: string
}

const AUDIT_FAMILIES = [
  ['decision', 'decisions'],
  ['node', 'nodes'],
  ['admin', 'administrators'],
  ['web_pair', 'pairings'],
  ['web_enforcement', 'web enforcement'],
] as const

/** An empty audit log: filtered to nothing, or nothing privileged has happened (or all of it aged out). */
function noAudit(f: { action?: string; actor?: string }): Html {
  if (f.action || f.actor)
    return emptyState(
      'audit',
      'No entries match these filters',
      html`<p>${f.actor ? html`No entry by an actor named exactly <code>${f.actor}</code>` : 'No entry'}${
        f.action ? ` for ${AUDIT_FAMILIES.find(([v]) => v === f.action)?.[1] ?? f.action}` : ''
      }. Actors read like <code>cli:root</code> or <code>admin:alice</code>. <a href="/audit">Show every entry</a></p>`,
    )
  return emptyState(
    'audit',
    'No audit entries yet',
    html`<p>Every privileged change is recorded here with who made it and when: decisions, nodes, administrators,
pairings and the kill switch, made on the dashboard, the API or the CLI (<code>edgegate node add</code>, for one).
Entries are kept for <code>--audit-retention</code> (a year by default); <code>edgegate audit list</code> reads the same log.</p>`,
  )
}

/** The audit log: who changed what, when; filtered by action family and actor (GET form). */
export function auditPage(admin: SignedIn, entries: AuditEntry[], f: { action?: string; actor?: string }): string {
  return layout(
    'edgegate: audit log',
    chrome(
      admin,
      '/audit',
      html`<h1>Audit log</h1>
<form class="filters" method="get" action="/audit">
<label>Action <select name="action"><option value="">all</option>${AUDIT_FAMILIES.map(
        ([value, label]) =>
          html`<option value="${value}"${f.action === value ? html` selected` : ''}>${label}</option>`,
      )}</select></label>
<label>Actor <input name="actor" value="${f.actor ?? ''}" placeholder="cli:root, admin:alice" size="18"></label>
<button type="submit">Filter</button>
</form>
${
  entries.length === 0
    ? noAudit(f)
    : html`<p class="muted">${entries.length} entr${entries.length === 1 ? 'y' : 'ies'}, newest first (at most 500). The same log: <code>edgegate audit list</code>.</p>
<div class="table-wrap"><table id="audit"><thead><tr><th>At</th><th>Actor</th><th>Action</th><th>Target</th></tr></thead><tbody>
${entries.map((e) => html`<tr><td>${time(Number(e.at_ms))}</td><td>${e.actor}</td><td>${e.action}</td><td><code>${e.target}</code></td></tr>`)}
</tbody></table></div>`
}`,
    ),
  )
}
