// Desktop sign-in approval (issue #21): the desktop app opened /#/desktop/<request id>; the
// signed-in reader sees which app asks and types the code the app shows. The page is never
// given the code: typing it proves the app is in front of the reader.

export const DESKTOP_ROUTE = /^#\/desktop\/([0-9a-f-]{36})$/

export async function renderDesktopApproval(ui, id, done) {
  const { h, api } = ui
  const box = h('section', { class: 'desktop-approval', 'aria-labelledby': 'desktop-title' })
  ui.app.replaceChildren(box)
  let request
  try {
    request = (await api('GET', `/api/v1/auth/desktop/${encodeURIComponent(id)}`)).request
  } catch (err) {
    box.replaceChildren(
      h('h1', { id: 'desktop-title' }, 'Desktop sign-in'),
      h('p', { class: 'error', role: 'alert' }, err.message),
      h('button', { onclick: done }, 'Continue to Notify'),
    )
    return
  }
  const error = h('p', { class: 'error', role: 'alert' })
  const code = h('input', {
    name: 'user_code',
    autocomplete: 'off',
    autocapitalize: 'characters',
    spellcheck: 'false',
    inputmode: 'text',
    maxlength: 12,
    required: true,
    'aria-describedby': 'desktop-hint',
  })
  const approve = async (e) => {
    e.preventDefault()
    try {
      await api('POST', `/api/v1/auth/desktop/${encodeURIComponent(id)}/approve`, { user_code: code.value })
      box.replaceChildren(
        h('h1', { id: 'desktop-title' }, 'Desktop app signed in'),
        h(
          'p',
          { role: 'status' },
          `${request.client_name} is now signed in as ${ui.state.me.username} with code `,
          h('strong', { class: 'code' }, code.value.toUpperCase().trim()),
          '. You can go back to the app.',
        ),
        h('button', { onclick: done }, 'Continue to Notify'),
      )
    } catch (err) {
      error.textContent = err.message
      if (err.code !== 'desktop_code_mismatch') form.querySelector('button.primary').disabled = true
      code.select()
    }
  }
  const form = h(
    'form',
    { class: 'signin', onsubmit: approve },
    h('h1', { id: 'desktop-title' }, 'Sign in a desktop app?'),
    h(
      'dl',
      { class: 'fields' },
      h('dt', {}, 'App'),
      h('dd', {}, request.client_name),
      h('dt', {}, 'Asked from'),
      h('dd', {}, request.client_address),
      h('dt', {}, 'Asked at'),
      h(
        'dd',
        {},
        h('time', { datetime: request.created_at, title: request.created_at }, ui.relative(request.created_at)),
      ),
      h('dt', {}, 'As'),
      h('dd', {}, ui.state.me.username),
    ),
    h(
      'p',
      { id: 'desktop-hint', class: 'muted' },
      'Type the code the app shows. If you did not start this sign-in yourself, deny it.',
    ),
    h('label', {}, 'Code shown in the app', code),
    h('button', { class: 'primary', type: 'submit' }, 'Approve'),
    h(
      'button',
      {
        type: 'button',
        onclick: async () => {
          await api('POST', `/api/v1/auth/desktop/${encodeURIComponent(id)}/deny`).catch(() => undefined)
          box.replaceChildren(
            h('h1', { id: 'desktop-title' }, 'Desktop sign-in denied'),
            h('p', { role: 'status' }, 'The app was not signed in.'),
            h('button', { onclick: done }, 'Continue to Notify'),
          )
        },
      },
      'Deny',
    ),
    error,
  )
  box.replaceChildren(form)
  code.focus()
}

/** The identity-provider button of the sign-in form, when the server has one configured. */
export async function providerButton(ui) {
  const { h, api } = ui
  try {
    const { oidc } = await api('GET', '/api/v1/auth/providers')
    if (!oidc) return ''
  } catch {
    return ''
  }
  const back = `/${location.hash}`
  return h(
    'a',
    { class: 'button provider', href: `/api/v1/auth/oidc/login?return_to=${encodeURIComponent(back)}` },
    'Sign in with your identity provider',
  )
}
