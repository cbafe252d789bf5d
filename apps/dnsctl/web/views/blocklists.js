// Blocklist configuration (sources, allow, deny) and refresh health. "Validate" is the API's dry
// run (normalised, deduplicated, sorted lists come back); "Publish" writes the three files at the
// revision the page loaded; compilation follows at the next scheduled refresh.
import { api, count, errorBox, h, labelled, notice, when } from '../lib.js'

const lines = (text) =>
  text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)

function healthCard(s) {
  const row = (label, ...value) => h('div', { class: 'kv' }, h('dt', {}, label), h('dd', {}, ...value))
  const job = (r) =>
    r === null
      ? [h('span', { class: 'muted' }, 'no result yet')]
      : [
          h('span', { class: r.ok ? 'ok' : 'bad' }, r.ok ? 'succeeded' : 'failed'),
          ' ',
          when(r.finished_at),
          r.error ? ` — ${r.error}` : '',
        ]
  return h(
    'section',
    { class: 'card', 'aria-labelledby': 'health-title' },
    h(
      'h2',
      { id: 'health-title' },
      'Refresh health ',
      h('span', { class: `badge ${s.healthy ? 'ok' : 'bad'}` }, s.healthy ? 'healthy' : 'unhealthy'),
    ),
    s.problems.length
      ? h(
          'ul',
          { class: 'problems' },
          s.problems.map((p) => h('li', {}, p)),
        )
      : null,
    h(
      'dl',
      {},
      row('Zone transfer', ...job(s.zone_transfer)),
      row('Last zone data', when(s.zone_transfer?.last_success_at)),
      row(
        'Earliest RRSIG expiry',
        s.zone_transfer?.earliest_rrsig_expiry
          ? when(s.zone_transfer.earliest_rrsig_expiry)
          : h('span', { class: 'muted' }, 'none'),
      ),
      row('Blocklist refresh', ...job(s.blocklist_refresh)),
      row('Last blocklist data', when(s.blocklist_refresh?.last_success_at)),
      row('Blocked domains', String(s.blocklist_refresh?.domain_count ?? '—')),
      row(
        'Primary vs secondary',
        s.differential_check
          ? [
              h(
                'span',
                { class: s.differential_check.mismatches ? 'bad' : 'ok' },
                count(s.differential_check.mismatches, 'mismatch', 'mismatches'),
              ),
              ' ',
              when(s.differential_check.checked_at),
            ]
          : h('span', { class: 'muted' }, 'not checked yet'),
      ),
    ),
  )
}

export async function render(container) {
  const status = h('div')
  const errors = errorBox()
  const health = h('div')
  const sources = h('textarea', { rows: 5, spellcheck: 'false', name: 'sources' })
  const allow = h('textarea', { rows: 5, spellcheck: 'false', name: 'allow' })
  const deny = h('textarea', { rows: 5, spellcheck: 'false', name: 'deny' })
  let revision
  const fill = (c) => {
    sources.value = c.sources.join('\n')
    allow.value = c.allow.join('\n')
    deny.value = c.deny.join('\n')
  }
  const put = (dryRun) =>
    api('PUT', '/v1/blocklists/config', {
      sources: lines(sources.value),
      allow: lines(allow.value),
      deny: lines(deny.value),
      dry_run: dryRun,
      expected_revision: revision,
    })
  const run = (dryRun) => async () => {
    errors.clear()
    status.replaceChildren()
    try {
      const { body } = await put(dryRun)
      fill(body)
      if (!dryRun) revision = body.revision
      status.replaceChildren(
        notice(
          dryRun
            ? `Valid: ${count(body.sources.length, 'source')}, ${body.allow.length} allowed, ${body.deny.length} denied (normalised below; nothing published).`
            : body.published
              ? 'Published; the resolvers get it at the next blocklist refresh.'
              : 'Nothing changed.',
        ),
      )
    } catch (err) {
      errors.show(err)
    }
  }
  const form = h(
    'form',
    { class: 'card', 'aria-labelledby': 'config-title' },
    h('h2', { id: 'config-title' }, 'Configuration'),
    h(
      'div',
      { class: 'columns three' },
      labelled('Sources (HTTPS URLs, at most 32)', sources),
      labelled('Allow (never blocked)', allow),
      labelled('Deny (always blocked)', deny),
    ),
    h(
      'div',
      { class: 'actions' },
      h('button', { type: 'button', onclick: run(true) }, 'Validate'),
      h('button', { type: 'submit', class: 'primary' }, 'Publish'),
    ),
  )
  form.addEventListener('submit', (e) => {
    e.preventDefault()
    run(false)()
  })
  // The form appears with the revision it publishes at.
  const [config, refresh] = await Promise.all([api('GET', '/v1/blocklists/config'), api('GET', '/v1/status/refresh')])
  container.append(h('h1', {}, 'Blocklists'), health, status, errors, form)
  revision = config.body.revision
  fill(config.body)
  health.replaceChildren(healthCard(refresh.body))
}
