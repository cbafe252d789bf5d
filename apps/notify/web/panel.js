// The user panel, the audit log and action targets in the notify web client (issue #21),
// for administrators. Loaded by app.js, which hands over its DOM helpers (`ui`). Secrets
// typed here (passwords, credentials, slash tokens) are sent once and never shown again.

import { confirmDialog } from './confirm.js'

const VIEWS = [
  ['users', 'Users'],
  ['audit', 'Audit log'],
  ['targets', 'Action targets'],
]

/** Open one panel view inside the app's layout. */
export async function openPanel(ui, view = 'users') {
  const { h } = ui
  const body = h(
    'div',
    { class: 'panel-body', role: 'tabpanel', id: 'panel-body', 'aria-labelledby': `tab-${view}` },
    h('p', { class: 'muted' }, 'Loading…'),
  )
  // The tabs pattern of WAI-ARIA: one tab in the Tab order, arrows and Home/End move between
  // them (and open the one they reach, with focus on it).
  const move = (e) => {
    const at = VIEWS.findIndex(([id]) => id === view)
    const to = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: VIEWS.length - 1 }[e.key]
    if (to === undefined) return
    e.preventDefault()
    const next = VIEWS[(to + VIEWS.length) % VIEWS.length][0]
    void openPanel(ui, next)
    document.getElementById(`tab-${next}`)?.focus()
  }
  const tabs = h(
    'div',
    { class: 'tabs', role: 'tablist', 'aria-label': 'Users and access', onkeydown: move },
    VIEWS.map(([id, label]) =>
      h(
        'button',
        {
          role: 'tab',
          id: `tab-${id}`,
          'aria-selected': id === view ? 'true' : 'false',
          'aria-controls': 'panel-body',
          tabindex: id === view ? '0' : '-1',
          onclick: () => openPanel(ui, id),
        },
        label,
      ),
    ),
  )
  ui.layout(h('section', { class: 'content panel' }, h('h2', {}, 'Users and access'), tabs, body))
  try {
    const render = { users: renderUsers, audit: renderAudit, targets: renderTargets }[view]
    body.replaceChildren(...(await render(ui, () => openPanel(ui, view))))
  } catch (err) {
    body.replaceChildren(h('p', { class: 'error', role: 'alert' }, err.message))
  }
}

/** A form that hands its FormData to `handler` on submit (the page does not navigate). */
function submitForm(ui, attrs, handler, ...children) {
  const onsubmit = (e) => {
    e.preventDefault()
    void handler(new FormData(e.target))
  }
  return ui.h('form', { ...attrs, onsubmit }, ...children)
}

function feedback(ui) {
  const el = ui.h('p', { class: 'panel-feedback', role: 'status' })
  if (flash) {
    el.className = 'panel-feedback success'
    el.textContent = flash
    flash = undefined
  }
  return {
    el,
    ok(text) {
      el.className = 'panel-feedback success'
      el.textContent = text
    },
    fail(err) {
      el.className = 'panel-feedback error'
      el.textContent = err.message
    },
  }
}

// ---- users -------------------------------------------------------------------------------

async function renderUsers(ui, reload) {
  const { h, api } = ui
  const { users } = await api('GET', '/api/v1/users')
  const note = feedback(ui)
  // `message`: the feedback once `fn` is done, or a function of what `fn` answered.
  const run = async (fn, message) => {
    try {
      const answer = await fn()
      await reloadWith(reload, typeof message === 'function' ? message(answer) : message)
    } catch (err) {
      note.fail(err)
    }
  }
  /** A button's handler that asks `question` (confirm.js) before it runs `fn`. */
  const asking = (question, fn, message) => async (e) => {
    if (await confirmDialog(question, e.currentTarget)) await run(fn, message)
  }
  const channels = ui.state.channels
  const rows = users.map((u) => {
    const self = u.username === ui.state.me.username
    const path = `/api/v1/users/${encodeURIComponent(u.username)}`
    const password = h('input', {
      type: 'password',
      autocomplete: 'new-password',
      minlength: 12,
      'aria-label': `New password for ${u.username}`,
      placeholder: 'new password (12+)',
    })
    const channel = h(
      'select',
      { 'aria-label': `Channel for ${u.username}` },
      channels.map((c) => h('option', { value: c.name }, c.name)),
    )
    const role = h(
      'select',
      { 'aria-label': `Role for ${u.username}` },
      ['viewer', 'operator', 'channel_admin'].map((r) => h('option', { value: r }, r)),
    )
    return h(
      'tr',
      { 'data-user': u.username },
      h('th', { scope: 'row' }, u.username, self ? h('span', { class: 'muted' }, ' (you)') : ''),
      h(
        'td',
        {},
        `${u.kind} · ${u.auth_type}`,
        u.kind === 'system'
          ? ''
          : h(
              'div',
              { class: 'muted' },
              u.last_sign_in_at
                ? [
                    'signed in ',
                    h(
                      'time',
                      { datetime: u.last_sign_in_at, title: u.last_sign_in_at },
                      ui.relative(u.last_sign_in_at),
                    ),
                  ]
                : 'never signed in',
            ),
      ),
      h('td', {}, u.admin ? 'administrator' : 'reader'),
      h('td', {}, u.enabled ? 'enabled' : h('span', { class: 'error' }, 'disabled')),
      h(
        'td',
        { class: 'row-actions' },
        h(
          'button',
          {
            onclick: u.admin
              ? asking(demoteQuestion(u, self), () => api('PATCH', path, { admin: false }), `${u.username} demoted`)
              : () => run(() => api('PATCH', path, { admin: true }), `${u.username} promoted`),
          },
          u.admin ? 'Remove administrator' : 'Make administrator',
        ),
        self
          ? ''
          : h(
              'button',
              {
                onclick: u.enabled
                  ? asking(disableQuestion(u), () => api('PATCH', path, { enabled: false }), `${u.username} disabled`)
                  : () => run(() => api('PATCH', path, { enabled: true }), `${u.username} enabled`),
              },
              u.enabled ? 'Disable' : 'Enable',
            ),
        h(
          'button',
          {
            onclick: asking(
              revokeQuestion(u, self),
              async () => (await api('POST', `${path}/revoke-sessions`)).revoked,
              (revoked) => `${u.username}: sessions revoked (${counted(revoked, 'session')} ended)`,
            ),
          },
          'Revoke sessions',
        ),
        u.kind === 'human' && u.auth_type !== 'oidc'
          ? submitForm(
              ui,
              { class: 'inline' },
              () =>
                run(
                  () => api('POST', `${path}/password`, { password: password.value }),
                  `${u.username}: password reset, sessions ended`,
                ),
              password,
              h('button', { type: 'submit' }, 'Reset password'),
            )
          : '',
        channels.length
          ? submitForm(
              ui,
              { class: 'inline' },
              () =>
                run(
                  () =>
                    api(
                      'PUT',
                      `/api/v1/channels/${encodeURIComponent(channel.value)}/members/${encodeURIComponent(u.username)}`,
                      { role: role.value },
                    ),
                  `${u.username} is ${role.value} of ${channel.value}`,
                ),
              channel,
              role,
              h('button', { type: 'submit' }, 'Assign role'),
            )
          : '',
      ),
    )
  })
  const create = submitForm(
    ui,
    { class: 'admin-form' },
    (f) =>
      run(
        () =>
          api('POST', '/api/v1/users', {
            username: f.get('username'),
            password: f.get('password') || undefined,
            admin: f.get('admin') === 'on',
          }),
        `${f.get('username')} created`,
      ),
    h('h3', {}, 'New reader'),
    h(
      'label',
      {},
      'Username',
      h('input', { name: 'username', required: true, pattern: '[a-z0-9][a-z0-9._\\-]{0,63}' }),
    ),
    h(
      'label',
      {},
      'Password (12+ characters)',
      h('input', { name: 'password', type: 'password', autocomplete: 'new-password', minlength: 12 }),
    ),
    h('label', { class: 'check' }, h('input', { name: 'admin', type: 'checkbox' }), 'Administrator'),
    h('button', { class: 'primary', type: 'submit' }, 'Create reader'),
  )
  return [
    note.el,
    h(
      'div',
      { class: 'table-wrap' },
      h(
        'table',
        { class: 'users' },
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            ['User', 'Sign-in', 'Role', 'Access', 'Actions'].map((c) => h('th', { scope: 'col' }, c)),
          ),
        ),
        h('tbody', {}, rows),
      ),
    ),
    create,
  ]
}

/** "1 session", "3 sessions". */
const counted = (n, noun) => `${n} ${noun}${n === 1 ? '' : 's'}`

/** What the reader's sessions and reader tokens are, in the panel's questions. */
function credentials(u, whose) {
  return {
    sessions:
      u.sessions > 0
        ? `${whose} ${counted(u.sessions, 'session')} (browsers and desktop apps) end${u.sessions === 1 ? 's' : ''} at once`
        : '',
    tokens: u.reader_tokens > 0 ? `${whose} ${counted(u.reader_tokens, 'reader token')}` : '',
  }
}

function revokeQuestion(u, self) {
  const { sessions, tokens } = credentials(u, self ? 'your' : `${u.username}'s`)
  const ended = self
    ? sessions
      ? `${sessions[0].toUpperCase()}${sessions.slice(1)}, this one too: you sign in again.`
      : 'Every session of yours ends, this one too: you sign in again.'
    : sessions
      ? `${sessions}; they sign in again to go on.`
      : `${u.username} had no session open when this list was loaded; any opened since ends.`
  return {
    title: self ? 'End all your sessions?' : `End every session of ${u.username}?`,
    message: `${ended}${tokens ? ` ${self ? 'Your' : 'Their'} ${counted(u.reader_tokens, 'reader token')} keep${u.reader_tokens === 1 ? 's' : ''} working.` : ''}`,
    action: 'Revoke sessions',
  }
}

function disableQuestion(u) {
  const { sessions, tokens } = credentials(u, 'their')
  const ends = [sessions, tokens && `${tokens} stop${u.reader_tokens === 1 ? 's' : ''} working`].filter(Boolean)
  return {
    title: `Disable ${u.username}?`,
    // A system reader never signs in: its reader tokens are its access.
    message: `${u.username} ${u.kind === 'system' ? 'loses all access' : 'can no longer sign in'}${ends.length ? `; ${ends.join(', and ')}` : ''}. Enable gives access back${tokens ? ' (reader tokens work again; sessions do not come back)' : ''}.`,
    action: 'Disable reader',
  }
}

function demoteQuestion(u, self) {
  return self
    ? {
        title: 'Remove your own administrator role?',
        message:
          'You lose the administration views (users, channels, webhooks, action targets) at once, and the private channels you are not a member of; only another administrator can give the role back.',
        action: 'Remove administrator',
      }
    : {
        title: `Remove ${u.username} as administrator?`,
        message: `${u.username} no longer manages users, channels, webhooks or action targets, and no longer sees the private channels they are not a member of. Their sessions stay.`,
        action: 'Remove administrator',
      }
}

let flash // a success message for the next render of the panel (set just before a reload)

/** Re-render the view and show `message` in its feedback line. */
async function reloadWith(reload, message) {
  flash = message
  await reload()
}

// ---- audit log -------------------------------------------------------------------------

async function renderAudit(ui) {
  const { h, api } = ui
  const list = h('ol', { class: 'audit', 'aria-label': 'Audit log' })
  // Details read as "role: operator, admin: false", not as a JSON object.
  const detailText = (details) =>
    Object.entries(details)
      .map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`)
      .join(', ')
  const more = h('button', { class: 'more' }, 'Load older')
  const load = async (before) => {
    const q = before ? `?limit=50&before=${before}` : '?limit=50'
    const { entries, next_before } = await api('GET', `/api/v1/admin/audit${q}`)
    list.append(
      ...entries.map((e) =>
        h(
          'li',
          {},
          h('time', { datetime: e.created_at, title: e.created_at }, ui.relative(e.created_at)),
          ' ',
          h('strong', {}, e.actor),
          ` ${e.action} `,
          h('code', {}, e.target),
          Object.keys(e.details).length ? h('span', { class: 'muted' }, ` ${detailText(e.details)}`) : '',
        ),
      ),
    )
    more.hidden = next_before === null
    more.onclick = () => load(next_before).catch((err) => ui.toast(err.message))
  }
  await load()
  if (!list.children.length) list.append(h('li', { class: 'muted' }, 'No administrative changes yet.'))
  return [list, more]
}

// ---- action targets and slash commands ---------------------------------------------------

async function renderTargets(ui, reload) {
  const { h, api } = ui
  const { targets } = await api('GET', '/api/v1/action-targets')
  const note = feedback(ui)
  const rows = targets.map((t) =>
    h(
      'tr',
      { 'data-target': t.name },
      h('th', { scope: 'row' }, t.kind === 'slash' ? `/${t.trigger}` : t.name),
      h('td', {}, h('code', {}, t.url)),
      h('td', {}, [t.allow_private ? 'private allowed' : 'public only', t.has_credential ? ' · credential' : '']),
      h(
        'td',
        {},
        h(
          'button',
          {
            onclick: async (e) => {
              const yes = await confirmDialog(
                {
                  title:
                    t.kind === 'slash'
                      ? `Revoke the slash command /${t.trigger}?`
                      : `Revoke the action target ${t.name}?`,
                  message: [
                    t.kind === 'slash'
                      ? 'The command stops working at once, on every node.'
                      : 'Card buttons that call it fail from now on, on every node; the cards stay.',
                    t.has_credential ? ' Its stored credential is deleted: registering it again needs it again.' : '',
                  ].join(''),
                  action: 'Revoke target',
                },
                e.currentTarget,
              )
              if (!yes) return
              try {
                await api('DELETE', `/api/v1/action-targets/${encodeURIComponent(t.name)}`)
                await reload()
              } catch (err) {
                note.fail(err)
              }
            },
          },
          'Revoke',
        ),
      ),
    ),
  )
  const save = submitForm(
    ui,
    { class: 'admin-form' },
    async (f) => {
      try {
        await api('PUT', `/api/v1/action-targets/${encodeURIComponent(f.get('name'))}`, {
          url: f.get('url'),
          allow_private: f.get('allow_private') === 'on',
          description: f.get('description') || undefined,
          ...(f.get('credential') ? { credential: f.get('credential') } : {}),
        })
        await reloadWith(reload, `Target ${f.get('name')} saved`)
      } catch (err) {
        note.fail(err)
      }
    },
    h('h3', {}, 'Register or replace a target'),
    h('label', {}, 'Name', h('input', { name: 'name', required: true, pattern: '[a-z0-9][a-z0-9_\\-]{0,63}' })),
    h('label', {}, 'Callback URL (https)', h('input', { name: 'url', type: 'url', required: true })),
    h(
      'label',
      {},
      'Bearer credential (optional, write-only)',
      h('input', { name: 'credential', type: 'password', autocomplete: 'off' }),
    ),
    h('label', {}, 'Description', h('input', { name: 'description' })),
    h(
      'label',
      { class: 'check' },
      h('input', { name: 'allow_private', type: 'checkbox' }),
      'Allow a private destination (and http)',
    ),
    h('button', { class: 'primary', type: 'submit' }, 'Save target'),
  )
  const json = h('textarea', {
    name: 'commands',
    rows: 6,
    'aria-label': 'Slash commands JSON',
    placeholder: '[{"trigger":"deploy","url":"https://…","token":"…"}]',
    spellcheck: 'false',
  })
  const importing = async (dryRun) => {
    try {
      const commands = JSON.parse(json.value || '[]')
      const r = await api('POST', '/api/v1/admin/import/slash-commands', { dry_run: dryRun, commands })
      note.ok(`${dryRun ? 'Dry run: would create' : 'Imported: created'} ${r.created}, existing ${r.existing}`)
      if (!dryRun) {
        json.value = ''
        await reloadWith(reload, `Imported: created ${r.created}, existing ${r.existing}`)
      }
    } catch (err) {
      note.fail(err instanceof SyntaxError ? new Error(`Not valid JSON: ${err.message}`) : err)
    }
  }
  const slash = h(
    'form',
    { class: 'admin-form', onsubmit: (e) => e.preventDefault() },
    h('h3', {}, 'Import slash commands (Mattermost)'),
    h(
      'p',
      { class: 'muted' },
      'A JSON array of {trigger, url, token}. Tokens are stored encrypted and never shown again.',
    ),
    json,
    h(
      'div',
      {},
      h('button', { type: 'button', onclick: () => importing(true) }, 'Dry run'),
      ' ',
      h('button', { class: 'primary', type: 'button', onclick: () => importing(false) }, 'Import'),
    ),
  )
  return [
    note.el,
    targets.length
      ? h(
          'div',
          { class: 'table-wrap' },
          h(
            'table',
            { class: 'targets' },
            h(
              'thead',
              {},
              h(
                'tr',
                {},
                ['Target', 'URL', 'Rules', ''].map((c) => h('th', { scope: 'col' }, c)),
              ),
            ),
            h('tbody', {}, rows),
          ),
        )
      : h('p', { class: 'muted' }, 'No action targets yet.'),
    h('div', { class: 'admin-grid' }, save, slash),
  ]
}
