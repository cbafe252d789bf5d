// The external DNS provider: the zone allowlist (validate against the provider, commit a new
// revision, the committed revisions), the records of an allowlisted zone, and RRset changes
// planned first (exact record-ID deletes, updates, creates, and the safety guards) and applied
// with confirm:true at the revision the plan was made for.
import { api, closablePanel, count, enc, errorBox, h, labelled, notice, table, when } from '../lib.js'

const BASE = '/v1/providers/extdns'
const TYPES = ['A', 'AAAA', 'CNAME', 'MX', 'TXT', 'SRV', 'CAA', 'NS']
const lines = (text) =>
  text
    .split(/[\n,]/)
    .map((l) => l.trim())
    .filter(Boolean)

function allowlistCard(reloadZones) {
  const errors = errorBox()
  const status = h('div')
  const zones = h('textarea', { rows: 4, spellcheck: 'false' })
  const result = h('div')
  const revisions = h('div')
  let current
  const card = h(
    'section',
    { class: 'card', 'aria-labelledby': 'allow-title' },
    h('h2', { id: 'allow-title' }, 'Zone allowlist'),
    h('p', { class: 'muted', id: 'allow-source' }),
    labelled('Allowlisted zones (one per line)', zones, 'only these zones can be read or changed at the provider'),
    h(
      'div',
      { class: 'actions' },
      h('button', { type: 'button', onclick: () => put(true) }, 'Validate'),
      h('button', { type: 'button', class: 'primary', onclick: () => put(false) }, 'Commit allowlist'),
    ),
    status,
    errors,
    result,
    h('h3', {}, 'Committed revisions'),
    revisions,
  )
  async function put(dryRun) {
    errors.clear()
    status.replaceChildren()
    try {
      const { body } = await api('PUT', `${BASE}/allowlist`, {
        zones: lines(zones.value),
        dry_run: dryRun,
        expected_revision: current.revision,
      })
      result.replaceChildren(
        table(
          'Validation at the provider',
          ['Zone', 'Found', 'Problem'],
          body.validation.map((v) => [
            v.zone,
            h('span', { class: v.found ? 'ok' : 'bad' }, v.found ? 'yes' : 'no'),
            v.error ?? '',
          ]),
        ),
      )
      zones.value = body.zones.join('\n')
      if (!dryRun) {
        await load()
        await reloadZones()
      }
      status.replaceChildren(
        notice(
          dryRun
            ? `Valid syntax: ${count(body.zones.length, 'zone')} (nothing committed).`
            : `Allowlist committed as revision ${body.revision}.`,
        ),
      )
    } catch (err) {
      errors.show(err)
    }
  }
  async function load() {
    current = (await api('GET', `${BASE}/allowlist`)).body
    zones.value = current.zones.join('\n')
    card.querySelector('#allow-source').textContent =
      current.source === 'environment'
        ? `From DNSCTL_PROVIDER_ZONES (revision ${current.revision}); nothing committed from the console yet.`
        : `Committed by ${current.actor} at ${current.committed_at} (revision ${current.revision}).`
    const revs = (await api('GET', `${BASE}/allowlist/revisions?limit=20`)).body.revisions
    revisions.replaceChildren(
      revs.length === 0
        ? h('p', { class: 'muted' }, 'None.')
        : table(
            '',
            ['Committed', 'Revision', 'Zones', 'By'],
            revs.map((r) => [when(r.committed_at), h('code', {}, r.revision), r.zones.join(', '), r.actor]),
            { class: 'allowlist-revisions' },
          ),
    )
  }
  return { card, load }
}

function planView(p) {
  const rec = (r) => `${r.name} ${r.ttl ?? ''} ${r.type} ${r.content}`.replace(/\s+/g, ' ')
  return h(
    'section',
    { class: 'diff', 'aria-label': 'Plan' },
    h(
      'h3',
      {},
      `Plan: ${count(p.summary.deletes, 'delete')}, ${count(p.summary.updates, 'update')}, ${count(p.summary.creates, 'create')} (of ${count(p.summary.existing_records, 'record')})`,
    ),
    h(
      'ul',
      { class: 'records' },
      p.plan.deletes.map((r) =>
        h(
          'li',
          { class: 'remove' },
          h('span', { class: 'sign', 'aria-hidden': 'true' }, '−'),
          `delete ${r.id}: ${rec(r)}`,
        ),
      ),
      p.plan.updates.map((u) =>
        h(
          'li',
          { class: 'update' },
          h('span', { class: 'sign', 'aria-hidden': 'true' }, '~'),
          `update ${u.id}: ${u.name} ${u.type} ${u.content} (TTL ${u.from.ttl} → ${u.to.ttl})`,
        ),
      ),
      p.plan.creates.map((c) =>
        h(
          'li',
          { class: 'add' },
          h('span', { class: 'sign', 'aria-hidden': 'true' }, '+'),
          `create ${rec(c)}${c.proxied ? ' (proxied)' : ''}`,
        ),
      ),
    ),
    p.safety.safe
      ? null
      : h('div', { class: 'error', role: 'alert' }, h('strong', {}, 'Safety guard: '), p.safety.reasons.join('; ')),
  )
}

function zoneView(zone, outlet) {
  const errors = errorBox()
  const status = h('div')
  const records = h('div')
  const plan = h('div', { class: 'plan-slot' })
  const name = h('input', { placeholder: 'www (@ for the apex)' })
  const type = h(
    'select',
    {},
    TYPES.map((t) => h('option', { value: t }, t)),
  )
  const ttl = h('input', { type: 'number', min: 1, placeholder: '300' })
  const values = h('textarea', { rows: 2, spellcheck: 'false', placeholder: '192.0.2.10' })
  const action = h(
    'select',
    {},
    h('option', { value: 'upsert' }, 'replace with these records'),
    h('option', { value: 'delete' }, 'delete the RRset'),
  )
  let state
  async function load() {
    state = (await api('GET', `${BASE}/zones/${enc(zone)}/records`)).body
    records.replaceChildren(
      h(
        'p',
        { class: 'muted' },
        `Revision ${state.revision}; assigned nameservers ${state.name_servers.join(', ') || '—'}`,
      ),
      table(
        `${count(state.records.length, 'record')} at the provider`,
        ['Name', 'Type', 'TTL', 'Content', 'Proxied', 'Comment', 'Tags', 'ID'],
        state.records.map((r) => [
          r.name,
          r.type,
          String(r.ttl),
          h('span', { class: 'rdata' }, r.content),
          r.proxied ? 'yes' : '',
          r.comment ?? '',
          (r.tags ?? []).join(', '),
          h('code', {}, r.id),
        ]),
        { class: 'provider-records' },
      ),
    )
  }
  function changes() {
    const n = name.value.trim() === '@' ? '' : name.value.trim()
    return [
      action.value === 'delete'
        ? { action: 'delete', name: n, type: type.value }
        : {
            action: 'upsert',
            name: n,
            type: type.value,
            ...(ttl.value ? { ttl: Number(ttl.value) } : {}),
            records: lines(values.value),
          },
    ]
  }
  async function makePlan() {
    const trigger = document.activeElement
    errors.clear()
    status.replaceChildren()
    const body = { changes: changes(), expected_revision: state.revision }
    let p
    try {
      p = (await api('POST', `${BASE}/zones/${enc(zone)}/plans`, body)).body
    } catch (err) {
      errors.show(err)
      return
    }
    const panel = h('div', { class: 'plan', role: 'group', 'aria-label': 'Plan at the provider' })
    const close = closablePanel(plan, panel, trigger)
    const force = h('input', { type: 'checkbox', id: 'force' })
    const apply = h('button', { type: 'button', class: 'primary' }, 'Apply at the provider')
    apply.addEventListener('click', async () => {
      apply.disabled = true
      try {
        const r = (
          await api('POST', `${BASE}/zones/${enc(zone)}/changes`, {
            ...body,
            confirm: true,
            ...(force.checked ? { force: true } : {}),
          })
        ).body
        // Applied: a failing reload must not offer the same change again.
        await close(() => load().catch((err) => errors.show(err)))
        status.replaceChildren(
          notice(
            `${r.applied ? 'Applied' : 'Nothing applied'}: API state ${r.api_verified ? 'verified' : 'NOT verified'}, nameservers ${r.dns_verified === null ? 'not checked' : r.dns_verified ? 'verified' : 'not serving it yet'}${r.rolled_back ? ', rolled back' : ''}.`,
          ),
          ...r.warnings.map((w) => h('p', { class: 'warn' }, w)),
        )
      } catch (err) {
        errors.show(err)
        apply.disabled = false
      }
    })
    panel.append(
      planView(p),
      ...(p.safety.safe ? [] : [h('label', { class: 'check' }, force, ' Force (override the safety guard)')]),
      h('div', { class: 'actions' }, apply, h('button', { type: 'button', onclick: () => close() }, 'Cancel')),
    )
    plan.replaceChildren(panel)
    apply.focus()
  }
  const form = h(
    'form',
    { class: 'card', 'aria-labelledby': 'pchange-title' },
    h('h3', { id: 'pchange-title' }, `Change an RRset of ${zone}`),
    h(
      'div',
      { class: 'grid change-grid' },
      labelled('Name', name),
      labelled('Type', type),
      labelled('Change', action),
      labelled('TTL (s)', ttl),
      labelled('Records (one per line)', values),
    ),
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Plan')),
  )
  form.addEventListener('submit', (e) => {
    e.preventDefault()
    makePlan()
  })
  outlet.replaceChildren(h('h2', {}, `Provider zone ${zone}`), status, errors, plan)
  // The change form appears with the revision its plans are made at.
  return load().then(
    () => outlet.append(form, records),
    (err) => errors.show(err),
  )
}

export async function render(container) {
  const errors = errorBox()
  const zonesSlot = h('div')
  const zoneOutlet = h('div')
  async function loadZones() {
    const { body } = await api('GET', `${BASE}/zones`)
    zonesSlot.replaceChildren(
      body.zones.length === 0
        ? h('p', { class: 'muted' }, 'No allowlisted zones: add one to the allowlist.')
        : table(
            'Allowlisted zones',
            ['Zone', 'At the provider', 'Nameservers', ''],
            body.zones.map((z) => [
              z.name,
              z.found ? h('span', { class: 'ok' }, 'found') : h('span', { class: 'bad' }, z.error ?? 'not found'),
              z.name_servers.join(', '),
              z.found
                ? h(
                    'button',
                    {
                      type: 'button',
                      class: 'link',
                      'aria-label': `Open ${z.name}`,
                      onclick: () => zoneView(z.name, zoneOutlet),
                    },
                    'Records and changes',
                  )
                : '',
            ]),
          ),
    )
  }
  const allow = allowlistCard(() => loadZones().catch((err) => errors.show(err)))
  container.append(h('h1', {}, 'External DNS provider'), errors, zonesSlot, zoneOutlet)
  try {
    await loadZones()
  } catch (err) {
    if (err.status === 404 && err.code === 'not_found') {
      container.replaceChildren(
        h('h1', {}, 'External DNS provider'),
        h('p', { class: 'muted' }, 'This dnsctl has no provider endpoints (/v1/providers/extdns).'),
      )
      return
    }
    errors.show(err)
  }
  // The allowlist form appears with the revision it commits at.
  await allow.load().then(
    () => container.append(allow.card),
    (err) => errors.show(err),
  )
}
