// Notification cards: every v1 card component and compatibility messages (a safe markdown
// subset), built with DOM APIs only; the card's buttons and its activity history.

import { actionButton, actionHistory, invocationText } from './actions.js'
import { api, h, link, relative, toast } from './dom.js'
import { markdown, plainText, safeHref } from './markdown.js'

/** Card rows: primary text, optional secondary, tags as badges, strong emphasis. */
function rowList(rows) {
  return h(
    'ul',
    { class: 'rows' },
    rows.map((r) =>
      h(
        'li',
        { class: r.emphasis === 'strong' ? 'strong' : undefined },
        r.primary,
        r.secondary ? ` — ${r.secondary}` : '',
        (r.tags ?? []).map((t) => h('span', { class: 'badge' }, t)),
      ),
    ),
  )
}

function cardContent(ui, n, canOperate) {
  const c = n.content ?? {}
  const out = []
  if (n.kind === 'card') {
    if (c.summary) out.push(h('p', { class: 'body' }, c.summary))
    if (c.badges?.length)
      out.push(
        h(
          'p',
          {},
          c.badges.map((b) => h('span', { class: `badge tone-${b.tone ?? 'neutral'}` }, b.text)),
        ),
      )
    if (c.metrics?.length)
      out.push(
        h(
          'div',
          { class: 'metrics' },
          c.metrics.map((m) => h('div', {}, h('span', { class: 'muted' }, m.label), h('b', {}, String(m.value)))),
        ),
      )
    if (c.rows?.length) out.push(rowList(c.rows))
    if (c.fields?.length)
      out.push(
        h(
          'dl',
          { class: 'fields' },
          c.fields.flatMap((f) => [h('dt', {}, f.label), h('dd', {}, f.value)]),
        ),
      )
    for (const img of c.images ?? []) {
      const src = safeHref(img.url)
      if (src) out.push(h('img', { src, alt: img.alt, loading: 'lazy', referrerpolicy: 'no-referrer' }))
    }
    if (c.links?.length)
      out.push(
        h(
          'p',
          {},
          c.links.map((l) => [link(l.label, l.url), ' ']),
        ),
      )
    // Row views: a titled list of rows, from one source or across several (type as a class).
    for (const v of c.views ?? [])
      out.push(
        h(
          'section',
          { class: `view view-${v.type}`, 'aria-label': v.title },
          h(
            'h3',
            {},
            v.title,
            ' ',
            h('span', { class: 'muted' }, v.type === 'cross-list' ? '(across sources)' : '(source)'),
          ),
          rowList(v.rows),
        ),
      )
    if (c.actions?.length)
      out.push(
        h(
          'p',
          {},
          c.actions.map((a, i) =>
            a.type === 'link' ? link(a.label, a.url) : actionButton(ui, n, a, i, canOperate(n.channel)),
          ),
        ),
      )
  } else {
    // Compatibility text is Mattermost-style markdown (a safe subset, built with DOM APIs).
    if (n.body)
      out.push(n.kind === 'compat' ? h('div', { class: 'md' }, markdown(n.body)) : h('p', { class: 'body' }, n.body))
    for (const a of c.attachments ?? []) {
      out.push(
        h(
          'div',
          { class: 'attachment' },
          a.title ? h('p', { class: 'strong' }, a.title_link ? link(a.title, a.title_link) : a.title) : '',
          a.pretext ? h('div', { class: 'md' }, markdown(a.pretext)) : '',
          a.text ? h('div', { class: 'md' }, markdown(a.text)) : '',
          a.fields?.length
            ? h(
                'dl',
                { class: 'fields' },
                a.fields.flatMap((f) => [h('dt', {}, f.title ?? ''), h('dd', {}, f.value ?? '')]),
              )
            : '',
        ),
      )
    }
  }
  return out
}

export function card(ui, n, index, { canOperate, act }) {
  const { state } = ui
  const operate = canOperate(n.channel)
  const archivedView = state.lifecycle === 'archived'
  return h(
    'li',
    {
      class: `card sev-${n.severity}${n.read ? '' : ' unread'}${index === state.selected ? ' selected' : ''}`,
      'data-id': n.id,
      tabindex: '-1',
    },
    h(
      'header',
      {},
      // A compatibility message's title is its raw first line: show it without markdown markers.
      h(
        'h2',
        {},
        (n.kind === 'compat' && n.body ? plainText(n.body.split('\n', 1)[0]) : n.title || n.body).slice(0, 120),
      ),
      h('span', { class: `badge sev-${n.severity}` }, n.severity),
      h('span', { class: 'badge state' }, n.state),
    ),
    h(
      'div',
      { class: 'meta' },
      h('span', {}, `#${n.channel}`),
      n.source ? h('span', {}, n.source) : '',
      n.username ? h('span', {}, n.username) : '',
      h('time', { datetime: n.created_at, title: n.created_at }, relative(n.created_at)),
    ),
    cardContent(ui, n, canOperate),
    h(
      'div',
      { class: 'actions' },
      n.read ? '' : h('button', { onclick: () => act(n, 'read') }, 'Mark read'),
      operate && (n.state === 'received' || n.state === 'firing')
        ? h('button', { onclick: () => act(n, 'acknowledge') }, 'Acknowledge')
        : '',
      operate && n.state !== 'resolved' ? h('button', { onclick: () => act(n, 'resolve') }, 'Resolve') : '',
      archivedView
        ? h('button', { onclick: () => act(n, 'restore') }, 'Restore')
        : h('button', { onclick: () => act(n, 'archive') }, 'Archive'),
      h('button', { onclick: (e) => showHistory(ui, n, e.target.closest('li')) }, 'History'),
    ),
  )
}

/**
 * The item's immutable activity events (who did what, when) and its action invocations
 * (who ran which button, with the outcome), oldest first, below the card.
 */
async function showHistory(ui, n, li) {
  try {
    const [{ events }, invocations] = await Promise.all([
      api('GET', `/api/v1/notifications/${n.id}/activity`),
      actionHistory(ui, n),
    ])
    const lines = [
      ...events.map((ev) => ({
        at: ev.created_at,
        text: `${ev.username} ${ev.action === 'acknowledge' ? 'acknowledged' : 'resolved'} (${ev.from_state} → ${ev.to_state}) `,
      })),
      ...invocations.map((inv) => ({
        at: inv.finished_at ?? inv.created_at,
        text: invocationText(n, inv),
        class: inv.outcome === 'failure' ? 'failure' : undefined,
      })),
    ].sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0))
    li.querySelector('.history')?.remove()
    li.append(
      h(
        'ol',
        { class: 'history', 'aria-label': 'Activity history' },
        lines.length
          ? lines.map((line) =>
              h(
                'li',
                { class: line.class },
                line.text,
                h('time', { datetime: line.at, title: line.at }, relative(line.at)),
              ),
            )
          : h('li', { class: 'muted' }, 'No activity yet.'),
      ),
    )
  } catch (err) {
    toast(err.message)
  }
}
