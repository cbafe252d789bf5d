// A zone's prior revisions and audit events. "Roll back" publishes a prior revision's text again
// through the normal pipeline: PUT /v1/zones/{zone} at the current revision, previewed as a dry
// run first (every check applies and the serial moves forward, as `dnsctl rollback` does).
import { api, enc, errorBox, h, notice, table, when } from '../lib.js'
import { planZonePut } from './zones.js'

function bytes(n) {
  return n < 1024 ? `${n} B` : n < 1048576 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1048576).toFixed(1)} MiB`
}

export async function render(container, { zone }) {
  const status = h('div')
  const errors = errorBox()
  const plan = h('div', { class: 'plan-slot' })
  const revisions = h('div')
  const audit = h('div')
  container.append(
    h(
      'p',
      { class: 'crumbs' },
      h('a', { href: '#/zones' }, 'Zones'),
      ' / ',
      h('a', { href: `#/zones/${enc(zone)}` }, zone),
      ' / history',
    ),
    h('h1', {}, `History of ${zone}`),
    status,
    errors,
    plan,
    h('h2', {}, 'Prior revisions'),
    revisions,
    h('h2', {}, 'Audit events'),
    audit,
  )

  async function rollback(entry) {
    errors.clear()
    try {
      const [old, current] = await Promise.all([
        api('GET', `/v1/zones/${enc(zone)}/history/${enc(entry.revision)}`),
        api('GET', `/v1/zones/${enc(zone)}`).catch((err) => (err.status === 404 ? undefined : Promise.reject(err))),
      ])
      planZonePut(plan, {
        zone,
        role: old.body.role,
        text: old.body.zone_text,
        revision: current?.body.revision,
        label: `Roll back to ${entry.revision.slice(0, 10)}`,
        done: async (r) => {
          await load().catch((err) => errors.show(err))
          status.replaceChildren(
            notice(
              r.changed === false
                ? `${zone} unchanged (serial ${r.serial}): it already has the content of ${entry.revision.slice(0, 10)}, nothing published.`
                : `${zone} rolled back to the content of ${entry.revision.slice(0, 10)}: serial ${r.serial}.`,
            ),
          )
        },
      })
    } catch (err) {
      errors.show(err)
    }
  }

  async function load() {
    const [h1, a1] = await Promise.all([
      api('GET', `/v1/zones/${enc(zone)}/history?limit=50`),
      api('GET', `/v1/zones/${enc(zone)}/audit?limit=50`),
    ])
    const items = h1.body.history
    revisions.replaceChildren(
      items.length === 0
        ? h('p', { class: 'muted' }, 'No prior revisions yet: every committed change keeps the one it replaced.')
        : table(
            '',
            ['Saved', 'Revision', 'Serial', 'Size', 'Replaced by', ''],
            items.map((r) => [
              when(r.saved_at),
              h('code', { title: r.revision }, r.revision.slice(0, 10)),
              String(r.serial),
              bytes(r.bytes),
              r.replaced_by,
              h(
                'button',
                { type: 'button', 'aria-label': `Roll back to ${r.revision.slice(0, 10)}`, onclick: () => rollback(r) },
                'Roll back',
              ),
            ]),
            { class: 'history' },
          ),
    )
    const events = a1.body.events
    audit.replaceChildren(
      events.length === 0
        ? h('p', { class: 'muted' }, 'No audit events.')
        : table(
            '',
            ['When', 'Action', 'Actor', 'Outcome', 'Revision'],
            events.map((e) => [
              when(e.at),
              e.action,
              e.actor,
              h('span', { class: e.outcome === 'committed' || e.outcome === 'ok' ? 'ok' : 'warn' }, e.outcome),
              h('code', {}, (e.after_revision ?? '').slice(0, 10)),
            ]),
            { class: 'audit' },
          ),
    )
  }
  await load()
}
