// One zone's RRsets with inline editing: every edit, addition and deletion is previewed as a
// dry run (POST /v1/zones/{zone}/changes with dry_run) at the revision the page shows, then
// committed with the same body; a concurrent change elsewhere answers 412 instead of being lost.
import { api, confirmDialog, count, enc, errorBox, h, labelled, notice, planThenCommit } from '../lib.js'

const TYPES = ['A', 'AAAA', 'CNAME', 'MX', 'TXT', 'SRV', 'CAA', 'NS']
/** Rows drawn at most; the filter narrows a big zone down. */
const MAX_ROWS = 500

const lines = (text) =>
  text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)

export async function render(container, { zone }) {
  const status = h('div')
  const errors = errorBox()
  const plan = h('div', { class: 'plan-slot', id: 'plan' })
  const filter = h('input', { type: 'search', placeholder: 'Filter by name or type', 'aria-label': 'Filter RRsets' })
  const body = h('tbody')
  const summary = h('p', { class: 'muted' })
  let state

  const change = (changes, what, after) =>
    planThenCommit(plan, {
      label: `Commit ${what}`,
      plan: async () =>
        (
          await api('POST', `/v1/zones/${enc(zone)}/changes`, {
            dry_run: true,
            expected_revision: state.revision,
            changes,
          })
        ).body.diff,
      commit: async () =>
        (await api('POST', `/v1/zones/${enc(zone)}/changes`, { expected_revision: state.revision, changes })).body,
      // The notice comes after the reload, so what it announces is on the page when it appears.
      done: async (r) => {
        after?.()
        await load()
        status.replaceChildren(
          notice(
            r.changed === false
              ? `${what}: nothing published, the zone is unchanged (serial ${r.serial}).`
              : `${what} committed: serial ${r.serial}, revision ${r.revision.slice(0, 10)}.`,
          ),
        )
      },
    })

  function row(set) {
    const label = `${set.name || '@'} ${set.type}`
    const readOnly = set.type === 'SOA' || state.role === 'secondary'
    const tr = h(
      'tr',
      {},
      h('td', {}, set.name || '@'),
      h('td', {}, set.type),
      h('td', { class: 'ttl', 'data-label': 'TTL' }, String(set.ttl)),
      h(
        'td',
        { class: 'rdata' },
        set.records.map((r) => h('div', {}, r)),
      ),
      h(
        'td',
        { class: 'row-actions' },
        readOnly
          ? h(
              'span',
              {
                class: 'muted',
                title: set.type === 'SOA' ? 'the serial advances with every change' : 'secondary zone',
              },
              'read-only',
            )
          : h(
              'button',
              {
                type: 'button',
                class: 'link',
                'aria-label': `Edit ${label}`,
                onclick: () => tr.replaceWith(editor(set, tr)),
              },
              'Edit',
            ),
      ),
    )
    return tr
  }

  function editor(set, shown) {
    const label = `${set.name || '@'} ${set.type}`
    const ttl = h('input', { type: 'number', min: 0, value: String(set.ttl), 'aria-label': `TTL of ${label}` })
    const records = h(
      'textarea',
      { rows: Math.max(2, set.records.length), spellcheck: 'false', 'aria-label': `Records of ${label}, one per line` },
      set.records.join('\n'),
    )
    const cancel = () => {
      tr.replaceWith(shown)
      shown.querySelector('button')?.focus()
    }
    const tr = h(
      'tr',
      { class: 'editing' },
      h('td', {}, set.name || '@'),
      h('td', {}, set.type),
      h('td', {}, ttl),
      h('td', { class: 'rdata' }, records),
      h(
        'td',
        { class: 'row-actions' },
        h(
          'button',
          {
            type: 'button',
            class: 'primary',
            onclick: () =>
              change(
                [
                  {
                    action: 'upsert',
                    name: set.name,
                    type: set.type,
                    ttl: Number(ttl.value),
                    records: lines(records.value),
                  },
                ],
                `change of ${label}`,
              ),
          },
          'Preview',
        ),
        h(
          'button',
          {
            type: 'button',
            onclick: () => change([{ action: 'delete', name: set.name, type: set.type }], `deletion of ${label}`),
          },
          'Delete',
        ),
        h('button', { type: 'button', onclick: cancel }, 'Cancel'),
      ),
    )
    tr.addEventListener('keydown', (e) => {
      if (e.key === 'Escape') cancel()
    })
    queueMicrotask(() => records.focus())
    return tr
  }

  function draw() {
    const q = filter.value.trim().toLowerCase()
    const sets = state.rrsets.filter((s) => !q || `${s.name || '@'} ${s.type}`.toLowerCase().includes(q))
    body.replaceChildren(...sets.slice(0, MAX_ROWS).map(row))
    summary.textContent = `${state.role} zone, serial ${state.serial}, revision ${state.revision.slice(0, 10)}; ${count(sets.length, 'RRset')}${sets.length > MAX_ROWS ? ` (first ${MAX_ROWS} shown: filter to narrow)` : ''}`
  }

  async function load() {
    errors.clear()
    try {
      state = (await api('GET', `/v1/zones/${enc(zone)}/rrsets`)).body
    } catch (err) {
      errors.show(err)
      return
    }
    draw()
  }

  const name = h('input', { placeholder: 'www (@ for the apex)', 'aria-label': 'New RRset name' })
  const type = h(
    'select',
    { 'aria-label': 'New RRset type' },
    TYPES.map((t) => h('option', { value: t }, t)),
  )
  const ttl = h('input', { type: 'number', min: 0, placeholder: 'SOA minimum', 'aria-label': 'New RRset TTL' })
  const records = h('textarea', {
    rows: 2,
    spellcheck: 'false',
    placeholder: '192.0.2.10',
    'aria-label': 'New RRset records, one per line',
  })
  const add = h(
    'form',
    { class: 'card', 'aria-labelledby': 'add-title' },
    h('h2', { id: 'add-title' }, 'Add or replace an RRset'),
    h(
      'div',
      { class: 'grid' },
      labelled('Name', name),
      labelled('Type', type),
      labelled('TTL (s)', ttl),
      labelled('Records (one per line)', records),
    ),
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Preview')),
  )
  add.addEventListener('submit', (e) => {
    e.preventDefault()
    const n = name.value.trim() === '@' ? '' : name.value.trim()
    change(
      [
        {
          action: 'upsert',
          name: n,
          type: type.value,
          ...(ttl.value ? { ttl: Number(ttl.value) } : {}),
          records: lines(records.value),
        },
      ],
      `${n || '@'} ${type.value}`,
      () => add.reset(),
    )
  })
  filter.addEventListener('input', draw)

  const removeZone = h('button', { type: 'button', class: 'danger' }, 'Delete zone…')
  removeZone.addEventListener('click', async () => {
    const confirmed = await confirmDialog({
      title: `Delete ${zone}?`,
      message: `Knot stops serving ${zone}. Its history is kept: importing the zone again brings it back.`,
      action: 'Delete zone',
      danger: true,
      typed: zone,
    })
    if (!confirmed) return
    try {
      await api('DELETE', `/v1/zones/${enc(zone)}`, { expected_revision: state.revision })
      location.hash = '#/zones'
    } catch (err) {
      errors.show(err)
    }
  })

  container.append(
    h('p', { class: 'crumbs' }, h('a', { href: '#/zones' }, 'Zones'), ' / ', zone),
    h('h1', {}, zone),
    errors,
  )
  // Everything that changes the zone appears once its revision is known: a change is made at it.
  await load()
  if (!state) return
  container.append(
    h(
      'p',
      { class: 'toolbar' },
      h('a', { href: `#/zones/${enc(zone)}/history` }, 'History and rollback'),
      ' ',
      removeZone,
    ),
    status,
    summary,
    plan,
    filter,
    h(
      'table',
      { class: 'rrsets' },
      h('caption', { class: 'sr' }, `RRsets of ${zone}`),
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['Name', 'Type', 'TTL', 'Records', ''].map((x) => h('th', { scope: 'col' }, x)),
        ),
      ),
      body,
    ),
    add,
  )
}
