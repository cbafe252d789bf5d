// /admin: every active artifact with its owner and active shares (revoke a share,
// soft-delete an artifact after a confirmation), then the appearance editor and the
// saved-theme selector (theme-editor.js).
import './header.js'
import { api, explain } from './api.js'
import { confirmAction, fill, h, when } from './dom.js'
import { appearanceSection } from './theme-editor.js'

const root = document.getElementById('app')
const status = h('p', { class: 'status', role: 'status', 'aria-live': 'polite' })
const alert = h('p', { class: 'error-text', role: 'alert' })
const tableBox = h('div', { class: 'table-wrap' })
// The table is rebuilt after a revoke or delete, which takes the focused button with it:
// keyboard users continue from the table's caption instead of the top of the page.
const keepPlace = () => tableBox.querySelector('caption')?.focus()

const say = (message, error) => {
  fill(status, message ?? '')
  fill(alert, error ?? '')
}

function shareItem(a, s) {
  const name = s.label ?? s.id
  return h(
    'li',
    {},
    h(
      'span',
      {},
      name,
      h(
        'span',
        { class: 'muted' },
        ` · ${s.follow_latest ? 'newest' : `v${s.version}`} · ${s.views}${s.max_views === null ? '' : `/${s.max_views}`} views`,
        s.expires_at ? [' · expires ', when(s.expires_at)] : '',
      ),
    ),
    h(
      'button',
      {
        type: 'button',
        class: 'danger small',
        'aria-label': `Revoke share ${name} of ${a.title}`,
        onclick: async (e) => {
          e.target.disabled = true
          try {
            await api('DELETE', `/api/v1/admin/shares/${s.id}`)
            say(`Share ${name} of “${a.title}” revoked.`)
            await loadArtifacts()
            keepPlace()
          } catch (err) {
            e.target.disabled = false
            say(undefined, explain(err))
          }
        },
      },
      'Revoke',
    ),
  )
}

function sharesEnding(n) {
  if (n === 0) return ''
  return n === 1 ? ' and its active share link stops working' : ` and its ${n} active share links stop working`
}

function row(a) {
  const remove = h(
    'button',
    {
      type: 'button',
      class: 'danger',
      // Two artifacts may share a title: the owner and version tell their buttons apart.
      'aria-label': `Delete ${a.title} by ${a.owner}, version ${a.latest_version}`,
      onclick: async () => {
        const ok = await confirmAction(
          `Delete “${a.title}”?`,
          `It disappears for everyone at once${sharesEnding(a.shares.length)}. The stored files stay with the operator; this cannot be undone here.`,
          'Delete artifact',
        )
        if (!ok) return
        try {
          await api('DELETE', `/api/v1/admin/artifacts/${a.id}`)
          say(`“${a.title}” deleted.`)
          await loadArtifacts()
          keepPlace()
        } catch (err) {
          say(undefined, explain(err))
        }
      },
    },
    'Delete…',
  )
  return h(
    'tr',
    { 'data-artifact': a.id },
    h('th', { scope: 'row' }, a.title),
    h('td', { 'data-label': 'Owner' }, a.owner),
    h('td', { 'data-label': 'Visibility' }, a.visibility === 'private' ? 'private' : 'everyone signed in'),
    h('td', { 'data-label': 'Version' }, String(a.latest_version)),
    h('td', { 'data-label': 'Updated' }, when(a.updated_at)),
    h(
      'td',
      { 'data-label': 'Active shares' },
      a.shares.length
        ? h(
            'ul',
            { class: 'plain shares' },
            a.shares.map((s) => shareItem(a, s)),
          )
        : h('span', { class: 'muted' }, 'none'),
    ),
    h('td', { 'data-label': 'Actions' }, remove),
  )
}

async function loadArtifacts() {
  try {
    const { artifacts } = await api('GET', '/api/v1/admin/artifacts')
    fill(
      tableBox,
      artifacts.length
        ? h(
            'table',
            { class: 'admin-artifacts' },
            h('caption', { tabindex: '-1' }, `${artifacts.length} active artifact${artifacts.length === 1 ? '' : 's'}`),
            h(
              'thead',
              {},
              h(
                'tr',
                {},
                ['Title', 'Owner', 'Visibility', 'Version', 'Updated', 'Active shares', 'Actions'].map((t) =>
                  h('th', { scope: 'col' }, t),
                ),
              ),
            ),
            h('tbody', {}, artifacts.map(row)),
          )
        : h('p', { class: 'muted' }, 'No active artifacts.'),
    )
  } catch (err) {
    say(undefined, `Could not load the artifacts: ${explain(err)}`)
  }
}

fill(
  root,
  h('h1', {}, 'Administration'),
  h(
    'section',
    { class: 'panel', 'aria-labelledby': 'artifacts-heading' },
    h('h2', { id: 'artifacts-heading' }, 'Artifacts'),
    h(
      'p',
      { class: 'muted' },
      'Every active artifact with its owner and active share links. Administrators can revoke shares and delete artifacts, not open or edit them.',
    ),
    status,
    alert,
    tableBox,
  ),
  appearanceSection(),
)
void loadArtifacts()
