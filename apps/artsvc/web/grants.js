// "People with access" in the sharing dialog (owners): private viewer and editor grants to
// accounts that have signed in once, by their subject; list, add, change and remove.
import { api, explain } from './api.js'
import { field, fill, h, keepFocus } from './dom.js'

export function grantsSection(artifact, say) {
  const list = h('ul', { class: 'shares grants', 'aria-label': 'People with access' })
  const subject = h('input', { type: 'text', maxlength: 512, autocomplete: 'off', placeholder: 'e.g. alice' })
  const role = h(
    'select',
    {},
    h('option', { value: 'viewer' }, 'Viewer (can open)'),
    h('option', { value: 'editor' }, 'Editor (can publish versions)'),
  )

  const refresh = async () => {
    const { grants } = await api('GET', `/api/v1/artifacts/${artifact.id}/grants`)
    fill(
      list,
      grants.length === 0
        ? h('li', { class: 'muted' }, 'Nobody else has private access.')
        : grants.map((g) =>
            h(
              'li',
              { class: 'grant' },
              h('span', { class: 'share-label' }, g.subject),
              h('span', { class: 'badge' }, g.role),
              h(
                'button',
                {
                  type: 'button',
                  class: 'danger small',
                  'aria-label': `Remove access of ${g.subject}`,
                  onclick: async (e) => {
                    e.target.disabled = true
                    try {
                      await api('DELETE', `/api/v1/artifacts/${artifact.id}/grants/${g.user}`)
                      say(`${g.subject} no longer has access.`)
                      await refresh()
                      keepFocus(list)
                    } catch (err) {
                      e.target.disabled = false
                      say(undefined, explain(err))
                    }
                  },
                },
                'Remove',
              ),
            ),
          ),
    )
  }

  const form = h(
    'form',
    { class: 'grant-form' },
    h(
      'div',
      { class: 'grid' },
      field('Account', subject, 'their sign-in subject; they must have signed in once'),
      field('Access', role),
    ),
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Give access')),
  )
  form.addEventListener('submit', async (e) => {
    e.preventDefault()
    const who = subject.value.trim()
    if (!who) {
      say(undefined, 'name the account to give access to')
      subject.focus()
      return
    }
    try {
      await api('PUT', `/api/v1/artifacts/${artifact.id}/grants`, { subject: who, role: role.value })
      say(`${who} is now ${role.value === 'editor' ? 'an editor' : 'a viewer'}.`)
      subject.value = ''
      await refresh()
    } catch (err) {
      say(undefined, explain(err))
    }
  })

  const section = h(
    'section',
    { class: 'grants-section', 'aria-labelledby': 'grants-heading' },
    h('h3', { id: 'grants-heading' }, 'People with access'),
    list,
    form,
  )
  return { section, refresh }
}
