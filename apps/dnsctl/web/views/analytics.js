// Query analytics: totals and blocked share, rankings of domains, clients and query types, and
// in the detailed privacy mode the newest queries. The privacy mode decides what exists; the page
// only says which mode is on.
import { api, errorBox, h, table, when } from '../lib.js'

const RANGES = ['1h', '6h', '24h', '7d']
const PRIVACY = {
  off: 'Privacy mode off: nothing is recorded.',
  aggregate:
    'Aggregate privacy mode: clients are shown as their network (IPv4 /24, IPv6 /48); recent queries are not kept.',
  detailed: 'Detailed privacy mode: full client addresses and the newest queries are kept (in memory only).',
}

function ranking(title, r, key, total) {
  const max = Math.max(1, ...r.items.map((i) => i.count))
  return h(
    'section',
    { class: 'card ranking' },
    h('h2', {}, title, r.truncated ? h('small', { class: 'muted' }, ' (top only)') : ''),
    r.items.length === 0
      ? h('p', { class: 'muted' }, 'No queries in this range.')
      : h(
          'ol',
          {},
          r.items.map((i) =>
            h(
              'li',
              {},
              h('span', { class: 'name' }, i[key]),
              h(
                'span',
                { class: 'bar', 'aria-hidden': 'true' },
                h('span', { class: 'fill', 'data-w': Math.round((100 * i.count) / max) }),
              ),
              h(
                'span',
                { class: 'count' },
                `${i.count.toLocaleString()}${total ? ` (${((100 * i.count) / total).toFixed(0)}%)` : ''}`,
              ),
            ),
          ),
        ),
  )
}

export async function render(container) {
  const errors = errorBox()
  const out = h('div')
  const buttons = RANGES.map((r) => h('button', { type: 'button', 'data-range': r, onclick: () => show(r) }, r))
  container.append(
    h('h1', {}, 'Query analytics'),
    h('div', { class: 'segmented', role: 'group', 'aria-label': 'Range' }, buttons),
    errors,
    out,
  )
  async function show(range) {
    for (const b of buttons) b.setAttribute('aria-pressed', String(b.dataset.range === range))
    errors.clear()
    let a
    try {
      a = (await api('GET', `/v1/query-analytics?range=${range}&limit=10&recent=50`)).body
    } catch (err) {
      errors.show(err)
      return
    }
    const total = a.totals.queries
    out.replaceChildren(
      h('p', { class: 'muted privacy' }, PRIVACY[a.privacy_mode] ?? a.privacy_mode),
      h(
        'div',
        { class: 'stats' },
        h(
          'div',
          { class: 'stat' },
          h('span', { class: 'big' }, total.toLocaleString()),
          h('span', {}, total === 1 ? 'query' : 'queries'),
        ),
        h(
          'div',
          { class: 'stat' },
          h('span', { class: 'big' }, a.totals.blocked.toLocaleString()),
          h('span', {}, 'blocked'),
        ),
        h(
          'div',
          { class: 'stat' },
          h('span', { class: 'big' }, `${a.blocked_percent.toFixed(1)}%`),
          h('span', {}, 'blocked share'),
        ),
      ),
      h(
        'div',
        { class: 'columns three' },
        ranking('Top domains', a.domains, 'domain', total),
        ranking('Top clients', a.clients, 'client', total),
        ranking('Query types', a.query_types, 'type', total),
      ),
      a.recent_queries
        ? h(
            'section',
            {},
            h('h2', {}, 'Recent queries'),
            a.recent_queries.length === 0
              ? h('p', { class: 'muted' }, 'None in this range.')
              : table(
                  '',
                  ['Time', 'Client', 'Name', 'Type', 'Answer'],
                  a.recent_queries.map((q) => [
                    when(q.time),
                    q.client,
                    q.name,
                    q.type,
                    h('span', { class: q.blocked ? 'bad' : '' }, q.blocked ? `${q.rcode} (blocked)` : q.rcode),
                  ]),
                  { class: 'recent' },
                ),
          )
        : null,
    )
    // Bar widths come from data attributes: the CSP forbids inline styles in markup, not CSSOM.
    for (const fill of out.querySelectorAll('.fill')) fill.style.width = `${fill.dataset.w}%`
  }
  await show('1h')
}
