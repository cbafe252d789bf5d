// The library: my artifacts, those shared with me (grants) and those every signed-in
// account may see; search by title, sort by last version; versions, visibility and shares
// of each; publishing and sharing. Everything is a real link, button or form control.
import './header.js'
import { api, explain } from './api.js'
import { bytes, field, fill, h, modal, refocus, uid, when } from './dom.js'
import { publishPanel } from './publish.js'
import { openShareDialog } from './share-dialog.js'

const root = document.getElementById('app')
let artifacts = []
const state = { query: '', sort: 'newest' }

const GROUPS = [
  {
    key: 'mine',
    title: 'My artifacts',
    empty: 'Nothing published yet: publish a ZIP or a folder above.',
    test: (a) => a.role === 'owner',
  },
  {
    key: 'shared',
    title: 'Shared with me',
    empty: 'Nobody has granted you access to an artifact yet.',
    test: (a) => a.role === 'viewer' || a.role === 'editor',
  },
  {
    key: 'everyone',
    title: 'Visible to everyone signed in',
    empty: 'No artifact is visible to every account.',
    test: (a) => a.role === 'reader',
  },
]

// By the newest version's time (a visibility change does not make an artifact "newer").
const versionTime = (a) => a.latest_version_at ?? a.updated_at
const SORTS = {
  newest: (a, b) => versionTime(b).localeCompare(versionTime(a)),
  oldest: (a, b) => versionTime(a).localeCompare(versionTime(b)),
  title: (a, b) => a.title.localeCompare(b.title),
}

const status = h('p', { class: 'status', role: 'status', 'aria-live': 'polite' })
const alert = h('p', { class: 'error-text', role: 'alert' })
const groupsBox = h('div', { class: 'groups' })

async function load() {
  try {
    artifacts = (await api('GET', '/api/v1/artifacts')).artifacts
    fill(alert, '')
    render()
  } catch (err) {
    fill(alert, `Could not load the library: ${explain(err)}`)
  }
}

async function details(a, box) {
  fill(box, h('p', { class: 'loading' }, 'Loading…'))
  try {
    const [detail, shares] = await Promise.all([
      api('GET', `/api/v1/artifacts/${a.id}`),
      a.role === 'owner' ? api('GET', `/api/v1/artifacts/${a.id}/shares`) : undefined,
    ])
    const versions = h(
      'ol',
      { class: 'versions', 'aria-label': `Versions of ${a.title}`, reversed: true },
      detail.versions.map((v) =>
        h(
          'li',
          {},
          h('a', { href: `/a/${a.id}?version=${v.number}` }, `Version ${v.number}`),
          h(
            'span',
            { class: 'muted' },
            ` · ${v.entrypoint} · ${v.file_count} files · ${bytes(v.total_bytes)} · `,
            when(v.created_at),
          ),
        ),
      ),
    )
    const parts = [h('h4', {}, 'Versions'), versions]
    if (shares) {
      const active = shares.shares.filter((s) => s.status === 'active')
      parts.push(
        h('h4', {}, 'Shares'),
        h(
          'p',
          { class: 'muted' },
          active.length
            ? `${active.length} active share link${active.length === 1 ? '' : 's'} of ${shares.shares.length}`
            : 'No active share links.',
        ),
      )
    }
    fill(box, parts)
  } catch (err) {
    fill(box, h('p', { class: 'error-text', role: 'alert' }, explain(err)))
  }
}

function card(a) {
  const detailsId = uid('details')
  const box = h('div', { class: 'card-details', id: detailsId, hidden: true })
  const toggle = h(
    'button',
    {
      type: 'button',
      class: 'quiet',
      'aria-expanded': 'false',
      'aria-controls': detailsId,
      'aria-label': `Details of ${a.title}`,
    },
    'Details',
  )
  toggle.addEventListener('click', () => {
    const open = box.hidden
    box.hidden = !open
    toggle.setAttribute('aria-expanded', String(open))
    if (open) void details(a, box)
  })
  const actions = [toggle]
  if (a.role === 'owner')
    actions.push(
      h(
        'button',
        {
          type: 'button',
          'aria-label': `Share ${a.title}`,
          onclick: () => openShareDialog(a, load).catch((err) => fill(alert, explain(err))),
        },
        'Share…',
      ),
    )
  if (a.role === 'owner' || a.role === 'editor')
    actions.push(
      h(
        'button',
        {
          type: 'button',
          'aria-label': `Publish a new version of ${a.title}`,
          onclick: async () => {
            // The current entrypoint is offered first when the new bundle has it.
            const detail = await api('GET', `/api/v1/artifacts/${a.id}`).catch(() => undefined)
            const panel = publishPanel({
              artifact: a.id,
              title: a.title,
              entrypoint: detail?.entrypoint,
              onPublished: () => void load(),
            })
            modal(`New version of “${a.title}”`, panel).querySelector('input')?.focus()
          },
        },
        'New version…',
      ),
    )
  const visibility = a.visibility === 'private' ? 'private' : 'everyone signed in'
  return h(
    'li',
    { class: 'card', 'data-artifact': a.id },
    h(
      'div',
      { class: 'card-main' },
      h('h3', {}, h('a', { href: `/a/${a.id}` }, a.title)),
      h(
        'p',
        { class: 'meta' },
        h('span', {}, `version ${a.latest_version}`),
        h('span', { class: `badge ${a.visibility}` }, visibility),
        a.role !== 'owner' ? h('span', {}, `by ${a.owner}`, a.role === 'editor' ? ' · you can publish' : '') : null,
        h('span', {}, 'last version ', when(versionTime(a))),
      ),
    ),
    h('div', { class: 'card-actions' }, actions),
    box,
  )
}

function render() {
  const focused = document.activeElement
  const q = state.query.trim().toLowerCase()
  const shown = artifacts.filter((a) => !q || a.title.toLowerCase().includes(q)).sort(SORTS[state.sort])
  fill(status, q ? `${shown.length} of ${artifacts.length} artifacts match “${state.query.trim()}”.` : '')
  fill(
    groupsBox,
    GROUPS.map((g) => {
      const items = shown.filter(g.test)
      const headingId = `group-${g.key}`
      return h(
        'section',
        { class: 'group', 'aria-labelledby': headingId },
        h('h2', { id: headingId }, g.title, h('span', { class: 'count' }, ` (${items.length})`)),
        items.length
          ? h('ul', { class: 'cards' }, items.map(card))
          : h('p', { class: 'muted empty' }, q ? 'No title matches.' : g.empty),
      )
    }),
  )
  // The cards are new: a keyboard user on one of their buttons stays on it (an open dialog
  // keeps focus; it gives it back when it closes, dom.js).
  if (focused && !focused.isConnected && !document.querySelector('dialog[open]')) refocus(focused)
}

const search = h('input', { type: 'search', placeholder: 'Search by title', autocomplete: 'off' })
search.addEventListener('input', () => {
  state.query = search.value
  render()
})
const sort = h(
  'select',
  {},
  h('option', { value: 'newest' }, 'Newest version first'),
  h('option', { value: 'oldest' }, 'Oldest first'),
  h('option', { value: 'title' }, 'Title A–Z'),
)
sort.addEventListener('change', () => {
  state.sort = sort.value
  render()
})
const publishBox = h(
  'section',
  { class: 'panel publish-box', id: 'publish', hidden: true, 'aria-label': 'Publish' },
  h('h2', {}, 'Publish'),
  publishPanel({ onPublished: () => void load() }),
)
const publishToggle = h(
  'button',
  { type: 'button', class: 'primary', 'aria-expanded': 'false', 'aria-controls': 'publish' },
  'Publish…',
)
publishToggle.addEventListener('click', () => {
  publishBox.hidden = !publishBox.hidden
  publishToggle.setAttribute('aria-expanded', String(!publishBox.hidden))
  if (!publishBox.hidden) publishBox.querySelector('input')?.focus()
})

fill(
  root,
  h(
    'div',
    { class: 'toolbar' },
    h('h1', {}, 'Library'),
    h(
      'div',
      { class: 'filters', role: 'search', 'aria-label': 'Find artifacts' },
      field('Search by title', search),
      field('Sort', sort),
    ),
    publishToggle,
  ),
  publishBox,
  status,
  alert,
  groupsBox,
)
void load()
