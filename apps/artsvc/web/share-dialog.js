// The sharing dialog of one artifact (owners): create a share link (pinned to a version by
// default, or following the newest; optional expiry and view limit), copy it once, list
// and revoke shares, and change the artifact's visibility.
import { api, explain } from './api.js'
import { field, fill, h, keepFocus, modal, when } from './dom.js'
import { grantsSection } from './grants.js'

const LATEST = 'latest'

function shareRow(artifact, share, onChange) {
  const what = share.follow_latest ? 'newest version' : `version ${share.version}`
  const views = share.max_views === null ? `${share.views} views` : `${share.views} of ${share.max_views} views`
  const revoke =
    share.status === 'active'
      ? h(
          'button',
          {
            type: 'button',
            class: 'danger small',
            'aria-label': `Revoke share ${share.label ?? share.id}`,
            onclick: async (e) => {
              e.target.disabled = true
              try {
                await api('DELETE', `/api/v1/artifacts/${artifact.id}/shares/${share.id}`)
                onChange(`Share ${share.label ?? share.id} revoked.`)
              } catch (err) {
                e.target.disabled = false
                onChange(undefined, explain(err))
              }
            },
          },
          'Revoke',
        )
      : null
  return h(
    'li',
    { class: `share ${share.status}` },
    h('span', { class: 'share-label' }, share.label ?? 'unlabelled link'),
    h('span', { class: `badge ${share.status}` }, share.status),
    h(
      'span',
      { class: 'muted' },
      `${what} · ${views}`,
      share.expires_at ? [' · expires ', when(share.expires_at)] : '',
    ),
    revoke,
  )
}

export async function openShareDialog(artifact, onChanged) {
  const detail = await api('GET', `/api/v1/artifacts/${artifact.id}`)
  const status = h('p', { class: 'status', role: 'status', 'aria-live': 'polite' })
  const alert = h('p', { class: 'error-text', role: 'alert' })
  const list = h('ul', { class: 'shares', 'aria-label': 'Shares' })
  const say = (message, error) => {
    fill(status, message ?? '')
    fill(alert, error ?? '')
  }

  const refresh = async () => {
    const { shares } = await api('GET', `/api/v1/artifacts/${artifact.id}/shares`)
    fill(
      list,
      shares.length
        ? shares.map((s) =>
            shareRow(artifact, s, async (m, e) => {
              say(m, e)
              onChanged?.()
              await refresh()
              keepFocus(list)
            }),
          )
        : h('li', { class: 'muted' }, 'No shares yet.'),
    )
  }

  // Visibility
  const visibility = h('fieldset', { class: 'visibility' }, h('legend', {}, 'Who can find it'))
  for (const [value, text] of [
    ['private', 'Only me and people I granted access'],
    ['authenticated', 'Everyone who signs in to this site'],
  ]) {
    const radio = h('input', { type: 'radio', name: 'visibility', value, checked: detail.visibility === value })
    radio.id = `vis-${value}`
    radio.addEventListener('change', async () => {
      try {
        await api('PUT', `/api/v1/artifacts/${artifact.id}/visibility`, { visibility: value })
        say(`Visibility is now ${value === 'private' ? 'private' : 'everyone signed in'}.`)
        onChanged?.()
      } catch (err) {
        say(undefined, explain(err))
      }
    })
    visibility.append(h('div', { class: 'radio' }, radio, h('label', { for: radio.id }, text)))
  }

  // New share
  const version = h(
    'select',
    {},
    detail.versions.map((v) => h('option', { value: String(v.number) }, `Version ${v.number} (pinned)`)),
    h('option', { value: LATEST }, 'Always the newest version'),
  )
  const expires = h('input', { type: 'datetime-local' })
  const maxViews = h('input', { type: 'number', min: 1, step: 1, inputmode: 'numeric' })
  const label = h('input', { type: 'text', maxlength: 200, placeholder: 'e.g. reviewers' })
  const linkBox = h('div', { class: 'new-link', hidden: true })
  const form = h(
    'form',
    { class: 'new-share' },
    h('h3', {}, 'New share link'),
    h(
      'div',
      { class: 'grid' },
      field('Shows', version, 'a pinned version never changes under the viewer'),
      field('Expires (optional)', expires, 'your local time'),
      field('View limit (optional)', maxViews, 'openings of the link'),
      field('Label (optional)', label),
    ),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, 'Create link')),
    linkBox,
  )
  form.addEventListener('submit', async (e) => {
    e.preventDefault()
    const body = {}
    if (version.value === LATEST) body.follow_latest = true
    else body.version = Number(version.value)
    if (expires.value) body.expires_at = new Date(expires.value).toISOString()
    if (maxViews.value) body.max_views = Number(maxViews.value)
    if (label.value.trim()) body.label = label.value.trim()
    try {
      const share = await api('POST', `/api/v1/artifacts/${artifact.id}/shares`, body)
      showLinkOnce(linkBox, share.url)
      say('Link created. Copy it now: it is shown only once.')
      await refresh()
      onChanged?.()
    } catch (err) {
      say(undefined, explain(err))
    }
  })

  const grants = grantsSection(artifact, say)
  // Status and errors stay in view at the bottom of the dialog (sticky, app.css).
  modal(
    `Share “${artifact.title}”`,
    visibility,
    grants.section,
    form,
    h('h3', {}, 'Links'),
    list,
    h('div', { class: 'dialog-status' }, status, alert),
  )
  await Promise.all([refresh(), grants.refresh()])
}

function showLinkOnce(box, url) {
  const input = h('input', { type: 'text', readonly: true, value: url, class: 'share-url' })
  const copy = h('button', { type: 'button', class: 'primary' }, 'Copy link')
  copy.addEventListener('click', async () => {
    input.select()
    try {
      await navigator.clipboard.writeText(url)
      fill(copy, 'Copied')
    } catch {
      fill(copy, 'Press Ctrl+C to copy')
    }
  })
  fill(
    box,
    field('Share link (shown once)', input, 'anyone with this link can open the artifact until you revoke it'),
    copy,
  )
  box.hidden = false
  box.scrollIntoView({ block: 'center' })
  input.focus({ preventScroll: true })
  input.select()
}
