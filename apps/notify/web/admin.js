// The administration view (administrators): create channels, set members' roles, create,
// renew and revoke webhooks (a new URL is shown once), import webhooks.

import { confirmDialog } from './confirm.js'
import { api, h, relative } from './dom.js'
import { webhookImportSection } from './webhook-import.js'

/** A one-time secret: shown once, with a copy button; never stored by the client. */
function secretOnce(label, value) {
  const input = h('input', { readonly: true, value, 'aria-label': label, size: 48 })
  return h(
    'div',
    { class: 'secret', role: 'status' },
    h('p', {}, `${label} (shown once; copy it now):`),
    input,
    h(
      'button',
      {
        onclick: async () => {
          input.select()
          await navigator.clipboard?.writeText(value).catch(() => undefined)
        },
      },
      'Copy',
    ),
  )
}

export async function renderAdmin(ui, section) {
  const hooks = (await api('GET', '/api/v1/webhooks')).webhooks
  const out = h('div', { class: 'admin-result' })
  const channelOptions = () => ui.state.channels.map((c) => h('option', { value: c.name }, c.name))
  const fail = (err) => out.replaceChildren(h('p', { class: 'error', role: 'alert' }, err.message))
  /** A form whose submit runs `submit(formData)`; a refusal shows its message in the result area. */
  const adminForm = (submit, ...children) =>
    h(
      'form',
      {
        class: 'admin-form',
        onsubmit: async (e) => {
          e.preventDefault()
          try {
            await submit(new FormData(e.target))
          } catch (err) {
            fail(err)
          }
        },
      },
      ...children,
    )
  const origin = location.origin

  const createChannel = adminForm(
    async (f) => {
      const r = await api('POST', '/api/v1/channels', {
        name: f.get('name'),
        display_name: f.get('display_name') || undefined,
        description: f.get('description') || undefined,
        accent_color: f.get('accent_color'),
        visibility: f.get('visibility'),
      })
      await ui.loadChannels()
      await renderAdmin(ui, h('h3', {}, `Channel ${r.channel.name} created`))
      document.querySelector('.admin-result')?.replaceChildren(secretOnce('Publishing URL', origin + r.publishing.path))
    },
    h('h3', {}, 'New channel'),
    h(
      'label',
      {},
      'URL name (cannot change later)',
      h('input', { name: 'name', required: true, pattern: '[a-z0-9][a-z0-9_\\-]{0,62}' }),
    ),
    h('label', {}, 'Display name', h('input', { name: 'display_name' })),
    h('label', {}, 'Description', h('input', { name: 'description' })),
    h('label', {}, 'Accent colour', h('input', { name: 'accent_color', type: 'color', value: '#4f6bed' })),
    h(
      'label',
      {},
      'Visibility',
      h(
        'select',
        { name: 'visibility' },
        h('option', { value: 'public' }, 'public'),
        h('option', { value: 'private' }, 'private'),
      ),
    ),
    h('button', { class: 'primary', type: 'submit' }, 'Create channel'),
  )

  const members = adminForm(
    async (f) => {
      await api(
        'PUT',
        `/api/v1/channels/${encodeURIComponent(f.get('channel'))}/members/${encodeURIComponent(f.get('username'))}`,
        { role: f.get('role') },
      )
      out.replaceChildren(h('p', { role: 'status' }, `${f.get('username')} is ${f.get('role')} of ${f.get('channel')}`))
    },
    h('h3', {}, 'Channel member'),
    h('label', {}, 'Channel', h('select', { name: 'channel' }, channelOptions())),
    h('label', {}, 'Username', h('input', { name: 'username', required: true })),
    h(
      'label',
      {},
      'Role',
      h(
        'select',
        { name: 'role' },
        ['viewer', 'operator', 'channel_admin'].map((r) => h('option', { value: r }, r)),
      ),
    ),
    h('button', { class: 'primary', type: 'submit' }, 'Set role'),
  )

  const createHook = adminForm(
    async (f) => {
      const r = await api('POST', '/api/v1/webhooks', {
        channel: f.get('channel'),
        channel_locked: f.get('locked') === 'on',
      })
      await renderAdmin(ui)
      document.querySelector('.admin-result')?.replaceChildren(secretOnce('Webhook URL', origin + r.webhook.path))
    },
    h('h3', {}, 'New webhook'),
    h('label', {}, 'Channel', h('select', { name: 'channel' }, channelOptions())),
    h(
      'label',
      { class: 'check' },
      h('input', { type: 'checkbox', name: 'locked' }),
      'Lock to this channel (ignore payload channel)',
    ),
    h('button', { class: 'primary', type: 'submit' }, 'Create webhook'),
  )

  // In a scrolling box: on a phone the table is wider than the screen, and the page must not be.
  const hookRows = h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { class: 'hooks' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['Channel', 'Locked', 'Kind', 'Created', 'Status', ''].map((t) => h('th', {}, t)),
        ),
      ),
      h(
        'tbody',
        {},
        hooks.map((w) =>
          h(
            'tr',
            { 'data-key': `hook:${w.id}` },
            h('td', {}, w.channel),
            h('td', {}, w.channel_locked ? 'yes' : 'no'),
            h('td', {}, w.kind),
            h('td', {}, h('time', { datetime: w.created_at, title: w.created_at }, relative(w.created_at))),
            h('td', {}, w.active ? 'active' : 'revoked'),
            h(
              'td',
              {},
              w.active
                ? [
                    h(
                      'button',
                      {
                        onclick: async () => {
                          try {
                            const r = await api('POST', `/api/v1/webhooks/${encodeURIComponent(w.id)}/new-url`)
                            await renderAdmin(ui)
                            document
                              .querySelector('.admin-result')
                              ?.replaceChildren(secretOnce('Webhook URL', origin + r.webhook.path))
                          } catch (err) {
                            fail(err)
                          }
                        },
                      },
                      'New URL',
                    ),
                    ' ',
                    h(
                      'button',
                      {
                        onclick: async (e) => {
                          const yes = await confirmDialog(
                            {
                              title: `Revoke this ${w.channel} webhook?`,
                              message:
                                'Deliveries to its URL are refused at once; the notifications it delivered stay.',
                              action: 'Revoke webhook',
                            },
                            e.currentTarget,
                          )
                          if (!yes) return
                          try {
                            await api('POST', `/api/v1/webhooks/${encodeURIComponent(w.id)}/revoke`)
                            await renderAdmin(ui)
                          } catch (err) {
                            fail(err)
                          }
                        },
                      },
                      'Revoke',
                    ),
                  ]
                : '',
            ),
          ),
        ),
      ),
    ),
  )

  const content = h(
    'section',
    { class: 'content admin' },
    h('h2', {}, 'Administration'),
    section ?? '',
    out,
    h('div', { class: 'admin-grid' }, createChannel, members, createHook),
    h('h3', {}, 'Webhooks'),
    hookRows,
    webhookImportSection(),
  )
  ui.layout(content)
}
