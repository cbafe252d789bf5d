// "Manage channels": for administrators and channel admins. Edit a channel's display name,
// description, accent colour and (administrators) visibility; the URL name never changes.
// Members: change a role, remove a member, add one.
import { confirmDialog } from './confirm.js'
import { api, h, toast } from './dom.js'

const ROLES = ['viewer', 'operator', 'channel_admin']

/** Whether the reader manages at least one channel (or is an administrator). */
export function managesChannels(me, channels) {
  return me.admin || channels.some((c) => c.role === 'channel_admin')
}

function status(text) {
  return h('p', { role: 'status', class: 'ok' }, text)
}

async function channelCard(c, me, rerender) {
  const { members } = await api('GET', `/api/v1/channels/${encodeURIComponent(c.name)}/members`)
  const out = h('div', { class: 'admin-result' })
  const fail = (err) => out.replaceChildren(h('p', { class: 'error', role: 'alert' }, err.message))
  const path = `/api/v1/channels/${encodeURIComponent(c.name)}`
  const edit = h(
    'form',
    {
      class: 'admin-form',
      'aria-label': `Edit ${c.name}`,
      onsubmit: async (e) => {
        e.preventDefault()
        const f = new FormData(e.target)
        const body = {
          display_name: f.get('display_name'),
          description: f.get('description'),
          accent_color: f.get('accent_color'),
        }
        if (me.admin) body.visibility = f.get('visibility')
        try {
          await api('PATCH', path, body)
          if (body.visibility) c.visibility = body.visibility
          out.replaceChildren(status(`Saved ${c.name}.`))
        } catch (err) {
          fail(err)
        }
      },
    },
    h(
      'label',
      {},
      'Display name',
      h('input', { name: 'display_name', value: c.display_name, required: true, maxlength: 100 }),
    ),
    h('label', {}, 'Description', h('input', { name: 'description', value: c.description, maxlength: 1000 })),
    h('label', {}, 'Accent colour', h('input', { name: 'accent_color', type: 'color', value: c.accent_color })),
    h(
      'label',
      {},
      'Visibility',
      h(
        'select',
        {
          name: 'visibility',
          disabled: !me.admin,
          title: me.admin ? undefined : 'Only administrators change visibility',
        },
        ['public', 'private'].map((v) => h('option', { value: v, selected: v === c.visibility }, v)),
      ),
    ),
    h('button', { class: 'primary', type: 'submit' }, 'Save'),
  )
  const setRole = async (username, role) => {
    await api('PUT', `${path}/members/${encodeURIComponent(username)}`, { role })
  }
  const rows = members.map((m) =>
    h(
      'tr',
      { 'data-key': `member:${c.name}/${m.username}` },
      h('td', {}, m.username),
      h(
        'td',
        {},
        h(
          'select',
          {
            'aria-label': `Role of ${m.username} in ${c.name}`,
            onchange: async (e) => {
              try {
                await setRole(m.username, e.target.value)
                m.role = e.target.value // what Remove's question names
                out.replaceChildren(status(`${m.username} is ${e.target.value} of ${c.name}.`))
              } catch (err) {
                fail(err)
              }
            },
          },
          ROLES.map((r) => h('option', { value: r, selected: r === m.role }, r)),
        ),
      ),
      h(
        'td',
        {},
        h(
          'button',
          {
            'aria-label': `Remove ${m.username} from ${c.name}`,
            onclick: async (e) => {
              const yes = await confirmDialog(
                {
                  title: `Remove ${m.username} from ${c.name}?`,
                  message:
                    c.visibility === 'private'
                      ? `${m.username} loses the ${m.role} role and no longer sees ${c.name}, a private channel.`
                      : `${m.username} loses the ${m.role} role in ${c.name}; the channel is public, so they still read it.`,
                  action: 'Remove member',
                },
                e.currentTarget,
              )
              if (!yes) return
              try {
                await api('DELETE', `${path}/members/${encodeURIComponent(m.username)}`)
                await rerender()
              } catch (err) {
                toast(err.message)
              }
            },
          },
          'Remove',
        ),
      ),
    ),
  )
  const add = h(
    'form',
    {
      class: 'inline-form',
      'aria-label': `Add a member to ${c.name}`,
      onsubmit: async (e) => {
        e.preventDefault()
        const f = new FormData(e.target)
        try {
          await setRole(f.get('username'), f.get('role'))
          await rerender()
        } catch (err) {
          fail(err)
        }
      },
    },
    h('input', { name: 'username', required: true, placeholder: 'username', 'aria-label': 'Username' }),
    h(
      'select',
      { name: 'role', 'aria-label': 'Role' },
      ROLES.map((r) => h('option', { value: r }, r)),
    ),
    h('button', { type: 'submit' }, 'Add member'),
  )
  return h(
    'article',
    { class: 'channel-admin', style: { '--chan': c.accent_color } },
    h('h3', {}, c.display_name, ' ', h('span', { class: 'muted' }, `#${c.name}`)),
    out,
    edit,
    h('h4', {}, 'Members'),
    members.length
      ? h(
          'table',
          { class: 'members' },
          h('thead', {}, h('tr', {}, h('th', {}, 'User'), h('th', {}, 'Role'), h('th', {}, ''))),
          h('tbody', {}, rows),
        )
      : h('p', { class: 'muted' }, 'No members yet.'),
    add,
  )
}

/** The view's content section. */
export async function channelAdminView(rerender, me) {
  const { channels } = await api('GET', '/api/v1/channels')
  const mine = channels.filter((c) => me.admin || c.role === 'channel_admin')
  const cards = await Promise.all(mine.map((c) => channelCard(c, me, rerender)))
  return h(
    'section',
    { class: 'content admin' },
    h('h2', {}, 'Manage channels'),
    h(
      'p',
      { class: 'muted' },
      me.admin
        ? 'Every channel. The URL name of a channel never changes.'
        : 'The channels you administer. Visibility is changed by an administrator.',
    ),
    cards.length ? cards : h('p', { class: 'muted' }, 'You do not administer any channel.'),
  )
}
