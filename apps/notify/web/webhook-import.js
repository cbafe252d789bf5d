// Webhook import for administrators (POST /api/v1/admin/import/webhooks): paste or load the
// JSON export, Preview runs it with dry_run (nothing is written) and shows what would
// happen; Import is enabled only for the text that was previewed. Hook ids are secrets of
// the old system: the table shows only their first characters, the server never echoes them.
import { api, h } from './dom.js'

function parse(text) {
  const data = JSON.parse(text)
  const webhooks = Array.isArray(data) ? data : data?.webhooks
  if (!Array.isArray(webhooks))
    throw new Error('expected {"webhooks": [...]} or an array of {id, channel, channel_locked}')
  return webhooks
}

function masked(id) {
  return typeof id === 'string' ? `${id.slice(0, 4)}…` : '?'
}

export function webhookImportSection() {
  let previewed
  const out = h('div', { class: 'admin-result', 'aria-live': 'polite' })
  const text = h('textarea', {
    name: 'import',
    rows: 6,
    'aria-label': 'Webhooks to import (JSON)',
    placeholder: '{"webhooks": [{"id": "…", "channel": "alerts", "channel_locked": false}]}',
    oninput: () => {
      previewed = undefined
      importButton.disabled = true
    },
  })
  const file = h('input', {
    type: 'file',
    accept: 'application/json,.json',
    'aria-label': 'Load a JSON file',
    onchange: async (e) => {
      const f = e.target.files?.[0]
      if (!f) return
      text.value = await f.text()
      text.dispatchEvent(new Event('input'))
    },
  })
  const fail = (err) => out.replaceChildren(h('p', { class: 'error', role: 'alert' }, err.message))
  const send = async (dryRun) => {
    const webhooks = parse(text.value)
    return { webhooks, result: await api('POST', '/api/v1/admin/import/webhooks', { dry_run: dryRun, webhooks }) }
  }
  const preview = h(
    'button',
    {
      type: 'button',
      onclick: async () => {
        try {
          const { webhooks, result } = await send(true)
          previewed = text.value
          importButton.disabled = false
          out.replaceChildren(
            h(
              'p',
              { role: 'status' },
              `Preview (nothing written yet): ${result.created} to create, ${result.existing} already present.`,
            ),
            h(
              'table',
              { class: 'hooks' },
              h(
                'thead',
                {},
                h(
                  'tr',
                  {},
                  ['#', 'Id', 'Channel', 'Locked'].map((t) => h('th', {}, t)),
                ),
              ),
              h(
                'tbody',
                {},
                webhooks.map((w, i) =>
                  h(
                    'tr',
                    {},
                    h('td', {}, String(i)),
                    h('td', {}, masked(w.id)),
                    h('td', {}, String(w.channel ?? '')),
                    h('td', {}, w.channel_locked ? 'yes' : 'no'),
                  ),
                ),
              ),
            ),
          )
        } catch (err) {
          previewed = undefined
          importButton.disabled = true
          fail(err)
        }
      },
    },
    'Preview',
  )
  const importButton = h(
    'button',
    {
      type: 'button',
      class: 'primary',
      disabled: true,
      onclick: async () => {
        if (previewed !== text.value) return
        try {
          const { result } = await send(false)
          importButton.disabled = true
          out.replaceChildren(
            h('p', { role: 'status' }, `Imported: ${result.created} created, ${result.existing} already present.`),
          )
        } catch (err) {
          fail(err)
        }
      },
    },
    'Import',
  )
  return h(
    'div',
    { class: 'admin-form import' },
    h('h3', {}, 'Import webhooks'),
    h('p', { class: 'muted' }, 'Existing hook URLs keep working: each id becomes the token of /hooks/{id}.'),
    text,
    file,
    h('p', {}, preview, ' ', importButton),
    out,
  )
}
