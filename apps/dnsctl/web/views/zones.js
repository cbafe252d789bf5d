// Zones: the list, "create from a few fields", import of zone text (file or pasted) and export.
// Create and import are PUT /v1/zones/{zone} with dry_run first (the diff), then for real.
import { api, count, download, enc, errorBox, h, labelled, notice, planThenCommit, table } from '../lib.js'

const words = (text) => text.split(/[\s,]+/).filter(Boolean)
const absolute = (name, origin) => (name.endsWith('.') ? name : `${name}.${origin}.`)

/** Zone text from the create form, the same shape `dnsctl zone create` sends (the API validates it). */
export function newZoneText(form) {
  const origin = form.name.trim().replace(/\.$/, '').toLowerCase()
  const ns = (words(form.ns).length ? words(form.ns) : ['ns1']).map((n) => absolute(n, origin))
  const rname = absolute((form.email.trim() || 'hostmaster').replace('@', '.'), origin)
  const serial = `${new Date().toISOString().slice(0, 10).replaceAll('-', '')}01`
  const lines = [
    `$ORIGIN ${origin}.`,
    `$TTL ${form.ttl || 3600}`,
    `@ IN SOA ${ns[0]} ${rname} ${serial} 3600 900 604800 300`,
    ...ns.map((n) => `@ IN NS ${n}`),
  ]
  for (const n of ns.filter((x) => x === `${origin}.` || x.endsWith(`.${origin}.`)))
    for (const a of words(form.addresses)) lines.push(`${n} IN ${a.includes(':') ? 'AAAA' : 'A'} ${a}`)
  return `${lines.join('\n')}\n`
}

function putZone(zone, role, text, revision, dryRun) {
  const body = { role, zone_text: text, dry_run: dryRun, ...(revision ? { expected_revision: revision } : {}) }
  return api('PUT', `/v1/zones/${enc(zone)}`, body)
}

/** Dry run then commit of a whole zone text; used by create, import and (history.js) rollback. */
export function planZonePut(container, { zone, role, text, revision, label, done }) {
  planThenCommit(container, {
    label,
    plan: async () => (await putZone(zone, role, text, revision, true)).body.diff,
    commit: async () => (await putZone(zone, role, text, revision, false)).body,
    done,
  })
}

function createForm(list, status) {
  const name = h('input', { name: 'zone', required: true, autocomplete: 'off', placeholder: 'example.com' })
  const ns = h('input', { name: 'ns', placeholder: 'ns1 ns2.example.net.' })
  const addresses = h('input', { name: 'addresses', placeholder: '192.0.2.1 2001:db8::1' })
  const email = h('input', { name: 'email', placeholder: 'hostmaster@example.com' })
  const ttl = h('input', { name: 'ttl', type: 'number', min: 0, value: '3600' })
  const plan = h('div', { class: 'plan-slot' })
  const form = h(
    'form',
    { class: 'card', 'aria-labelledby': 'create-title' },
    h('h2', { id: 'create-title' }, 'Create a zone'),
    h(
      'div',
      { class: 'grid' },
      labelled('Zone name', name),
      labelled('Name servers', ns, 'relative names are inside the zone; default ns1'),
      labelled('Name server addresses', addresses, 'glue for name servers inside the zone'),
      labelled('Contact', email, 'default hostmaster@<zone>'),
      labelled('Default TTL (s)', ttl),
    ),
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Preview')),
    plan,
  )
  form.addEventListener('submit', (e) => {
    e.preventDefault()
    const zone = name.value.trim().replace(/\.$/, '')
    planZonePut(plan, {
      zone,
      role: 'primary',
      label: 'Create zone',
      text: newZoneText({ name: zone, ns: ns.value, addresses: addresses.value, email: email.value, ttl: ttl.value }),
      done: async (r) => {
        await list()
        status.replaceChildren(notice(`Zone ${r.name} created: serial ${r.serial}, revision ${r.revision}.`))
      },
    })
  })
  return form
}

function importForm(list, status, zones) {
  const name = h('input', { name: 'zone', required: true, autocomplete: 'off', list: 'zone-names' })
  const role = h(
    'select',
    { name: 'role' },
    h('option', { value: 'primary' }, 'primary'),
    h('option', { value: 'secondary' }, 'secondary'),
  )
  const file = h('input', { type: 'file', name: 'file', accept: '.zone,.txt,text/plain,text/dns' })
  const text = h('textarea', {
    name: 'zone_text',
    rows: 8,
    spellcheck: 'false',
    placeholder: '$ORIGIN example.com.\n…',
  })
  const plan = h('div', { class: 'plan-slot' })
  file.addEventListener('change', async () => {
    if (file.files?.[0]) text.value = await file.files[0].text()
  })
  const form = h(
    'form',
    { class: 'card', 'aria-labelledby': 'import-title' },
    h('h2', { id: 'import-title' }, 'Import zone text'),
    h(
      'datalist',
      { id: 'zone-names' },
      zones.map((z) => h('option', { value: z.name })),
    ),
    h('div', { class: 'grid' }, labelled('Zone name', name), labelled('Role', role), labelled('Zone file', file)),
    labelled('Zone text', text, 'replaces the whole zone; the preview shows every record it changes'),
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Preview import')),
    plan,
  )
  form.addEventListener('submit', (e) => {
    e.preventDefault()
    const zone = name.value.trim().replace(/\.$/, '')
    // An existing zone is replaced only at the revision this page saw (412 otherwise).
    const current = zones.find((z) => z.name === zone)
    planZonePut(plan, {
      zone,
      role: role.value,
      text: text.value,
      revision: current?.revision,
      label: current ? 'Replace zone' : 'Create zone',
      done: async (r) => {
        await list()
        status.replaceChildren(
          notice(
            r.changed === false
              ? `Zone ${r.name} unchanged (serial ${r.serial}): nothing published.`
              : `Zone ${r.name} imported: serial ${r.serial}, ${count(r.records, 'record')}.`,
          ),
        )
      },
    })
  })
  return form
}

export async function render(container) {
  const status = h('div')
  const errors = errorBox()
  const listSlot = h('div')
  const forms = h('div', { class: 'columns' })
  container.append(h('h1', {}, 'Zones'), status, errors, listSlot, forms)
  let zones = []
  const list = async () => {
    errors.clear()
    try {
      zones = (await api('GET', '/v1/zones')).body.zones
    } catch (err) {
      errors.show(err)
      return
    }
    const exportButton = (z) =>
      h(
        'button',
        {
          type: 'button',
          class: 'link',
          'aria-label': `Export ${z.name}`,
          onclick: async () => {
            try {
              download(`${z.name}.zone`, (await api('GET', `/v1/zones/${enc(z.name)}`)).body.zone_text)
            } catch (err) {
              errors.show(err)
            }
          },
        },
        'Export',
      )
    listSlot.replaceChildren(
      zones.length === 0
        ? h('p', { class: 'muted' }, 'No zones yet: create one below, or import a zone file.')
        : table(
            `${count(zones.length, 'managed zone')}`,
            ['Zone', 'Role', 'Serial', 'Records', 'Revision', ''],
            zones.map((z) => [
              h('a', { href: `#/zones/${enc(z.name)}` }, z.name),
              z.role,
              String(z.serial),
              String(z.records),
              h('code', { title: z.revision }, z.revision.slice(0, 10)),
              h(
                'span',
                { class: 'row-actions' },
                h('a', { href: `#/zones/${enc(z.name)}/history` }, 'History'),
                ' ',
                exportButton(z),
              ),
            ]),
            { class: 'zones' },
          ),
    )
    forms.replaceChildren(createForm(list, status), importForm(list, status, zones))
  }
  await list()
}
