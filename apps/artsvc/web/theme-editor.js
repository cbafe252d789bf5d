// The appearance editor (site name, message, palette with a live preview, logo and favicon
// with their rules shown before upload) and the saved-theme selector (edit, activate,
// delete inactive themes). Saving goes through PUT /api/v1/admin/branding.
import { api, explain } from './api.js'
import { bytes, confirmAction, field, fill, h, keepFocus } from './dom.js'
import { DARK_SURFACES, darkAccent, isDarkTheme, onColor } from './palette.js'

const DEFAULT_PALETTE = { primary: '#1f4fd1', background: '#f5f6f8', text: '#1b1f29', accent: '#1f4fd1' }
const COLORS = [
  ['primary', 'Primary (header, buttons)'],
  ['background', 'Background'],
  ['text', 'Text'],
  ['accent', 'Accent (links, focus)'],
]

function readBase64(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader()
    reader.onload = () => resolve(String(reader.result).replace(/^data:[^,]*,/, ''))
    reader.onerror = () => reject(new Error(`could not read ${file.name}`))
    reader.readAsDataURL(file)
  })
}

/** Apply a newly activated theme to this page without a reload. */
function applyToPage(theme) {
  const link = document.querySelector('link[href^="/branding/theme.css"]')
  if (link) link.href = `/branding/theme.css?v=${Date.now()}`
  const name = document.querySelector('.site-name')
  if (name) name.textContent = theme.site_name
  const brand = document.querySelector('a.brand')
  brand?.querySelector('img.logo')?.remove()
  if (theme.logo_url && brand) brand.prepend(h('img', { class: 'logo', src: theme.logo_url, alt: '' }))
  const icon = document.querySelector('link[rel="icon"]')
  if (icon) icon.href = theme.favicon_url ?? '/static/app/icon.svg'
  document.querySelector('header.site + .site-message')?.remove()
  if (theme.message)
    document.querySelector('header.site')?.after(h('p', { class: 'site-message', role: 'note' }, theme.message))
  document.title = document.title.replace(/ · [^·]*$/, ` · ${theme.site_name}`)
}

export function appearanceSection() {
  let data
  let editing // the saved theme being edited, if any
  const images = { logo: undefined, favicon: undefined } // undefined keep, null remove, {base64} replace
  const status = h('p', { class: 'status', role: 'status', 'aria-live': 'polite' })
  const alert = h('p', { class: 'error-text', role: 'alert' })
  const say = (message, error) => {
    fill(status, message ?? '')
    fill(alert, error ?? '')
  }

  const name = h('input', { type: 'text', required: true, pattern: '[a-z0-9][a-z0-9\\-]{0,62}', maxlength: 63 })
  const siteName = h('input', { type: 'text', required: true, maxlength: 100 })
  const message = h('textarea', { rows: 2, maxlength: 500 })
  const colors = Object.fromEntries(
    COLORS.map(([key]) => [key, h('input', { type: 'color', value: DEFAULT_PALETTE[key] })]),
  )
  const rules = h('p', { class: 'rules', id: 'image-rules' })
  const logoInput = h('input', {
    type: 'file',
    accept: 'image/png,image/jpeg,image/webp',
    'aria-describedby': 'image-rules',
  })
  const faviconInput = h('input', {
    type: 'file',
    accept: 'image/png,image/jpeg,image/webp',
    'aria-describedby': 'image-rules',
  })
  const removeLogo = h('input', { type: 'checkbox', id: 'remove-logo' })
  const removeFavicon = h('input', { type: 'checkbox', id: 'remove-favicon' })

  // Live previews, light and dark side by side: the custom properties theme.css would set in
  // each scheme, set on the preview box only.
  const makePreview = (scheme, label) => {
    const logo = h('img', { class: 'logo', alt: '', hidden: true })
    const siteTitle = h('span', { class: 'site-name' })
    const note = h('p', { class: 'preview-message' })
    const box = h(
      'div',
      { class: `theme-preview ${scheme}`, 'aria-label': label, role: 'group', 'data-scheme': scheme },
      h('div', { class: 'preview-header' }, logo, siteTitle),
      note,
      h(
        'div',
        { class: 'preview-body' },
        h(
          'p',
          {},
          'Artifacts look like this. ',
          h('a', { href: '#', tabindex: '-1', onclick: (e) => e.preventDefault() }, 'A link'),
        ),
        h('span', { class: 'button primary', 'aria-hidden': 'true' }, 'A button'),
      ),
    )
    return { scheme, box, logo, siteTitle, note }
  }
  const previews = [makePreview('light', 'Light preview'), makePreview('dark', 'Dark preview')]
  /** What each scheme shows for the palette in the form (src/ui/theme.ts themeCss). */
  const schemeColors = (palette, scheme) =>
    scheme === 'light' || isDarkTheme(palette)
      ? palette
      : {
          ...palette,
          background: DARK_SURFACES.background,
          text: DARK_SURFACES.text,
          accent: darkAccent(palette.accent),
        }
  let logoPreviewUrl
  const updatePreview = () => {
    const palette = Object.fromEntries(COLORS.map(([key]) => [key, colors[key].value]))
    const url = images.logo === null || removeLogo.checked ? null : (logoPreviewUrl ?? editing?.logo_url ?? null)
    for (const p of previews) {
      const shown = schemeColors(palette, p.scheme)
      for (const [key] of COLORS) p.box.style.setProperty(`--brand-${key === 'background' ? 'bg' : key}`, shown[key])
      p.box.style.setProperty('--brand-on-primary', onColor(shown.primary))
      p.siteTitle.textContent = siteName.value || 'Site name'
      p.note.textContent = message.value
      p.note.hidden = !message.value
      p.logo.hidden = !url
      if (url) p.logo.src = url
    }
  }

  const chooseImage = (which, input) => async () => {
    const file = input.files[0]
    if (!file) return
    const limits = data.limits
    if (!limits.image_types.includes(file.type) || file.size > limits.max_image_bytes) {
      input.value = ''
      say(
        undefined,
        `${file.name} cannot be the ${which}: ${!limits.image_types.includes(file.type) ? 'use PNG, JPEG or WebP' : `it is ${bytes(file.size)}, the limit is ${bytes(limits.max_image_bytes)}`}.`,
      )
      return
    }
    images[which] = { base64: await readBase64(file) }
    if (which === 'logo') {
      if (logoPreviewUrl) URL.revokeObjectURL(logoPreviewUrl)
      logoPreviewUrl = URL.createObjectURL(file)
      removeLogo.checked = false
    } else removeFavicon.checked = false
    say(`${file.name} (${bytes(file.size)}) will be the ${which} when you save.`)
    updatePreview()
  }
  logoInput.addEventListener('change', chooseImage('logo', logoInput))
  faviconInput.addEventListener('change', chooseImage('favicon', faviconInput))

  const load = (theme) => {
    editing = theme
    images.logo = undefined
    images.favicon = undefined
    logoPreviewUrl = undefined
    logoInput.value = ''
    faviconInput.value = ''
    removeLogo.checked = false
    removeFavicon.checked = false
    name.value = theme?.name ?? ''
    siteName.value = theme?.site_name ?? ''
    message.value = theme?.message ?? ''
    const palette = {
      ...DEFAULT_PALETTE,
      ...(theme ? { accent: theme.palette.primary } : {}),
      ...(theme?.palette ?? {}),
    }
    for (const [key] of COLORS) colors[key].value = palette[key]
    updatePreview()
  }
  for (const el of [siteName, message, ...Object.values(colors), removeLogo])
    el.addEventListener('input', updatePreview)

  const save = async (activate) => {
    if (!name.checkValidity() || !siteName.value.trim()) {
      say(undefined, 'A theme needs a name (lower-case letters, digits and dashes) and a site name.')
      ;(name.checkValidity() ? siteName : name).focus()
      return
    }
    const theme = {
      name: name.value,
      site_name: siteName.value.trim(),
      message: message.value,
      palette: Object.fromEntries(COLORS.map(([key]) => [key, colors[key].value])),
    }
    const sameTheme = editing?.name === theme.name
    for (const [which, remove] of [
      ['logo', removeLogo],
      ['favicon', removeFavicon],
    ]) {
      if (remove.checked) theme[which] = null
      else if (images[which]) theme[which] = images[which]
      // A new theme name starts without the images of the one it was copied from.
      else if (!sameTheme) theme[which] = null
    }
    try {
      data = await api('PUT', '/api/v1/admin/branding', activate ? { theme, activate: theme.name } : { theme })
      const saved = data.themes.find((t) => t.name === theme.name)
      say(activate ? `Theme ${theme.name} saved and active.` : `Theme ${theme.name} saved.`)
      if (activate) applyToPage(saved)
      renderList()
      load(saved)
    } catch (err) {
      say(undefined, `Not saved: ${explain(err)}`)
    }
  }

  const form = h(
    'form',
    { class: 'theme-form', novalidate: true },
    h(
      'div',
      { class: 'grid' },
      field('Theme name', name, 'a-z, 0-9 and -; saving under an existing name replaces it'),
      field('Site name', siteName),
    ),
    field('Message', message, 'plain text shown under the header on every page'),
    h(
      'fieldset',
      { class: 'palette' },
      h('legend', {}, 'Palette'),
      COLORS.map(([key, text]) => field(text, colors[key])),
    ),
    h(
      'fieldset',
      { class: 'images' },
      h('legend', {}, 'Logo and favicon'),
      rules,
      field('Logo', logoInput),
      h('div', { class: 'checkbox' }, removeLogo, h('label', { for: 'remove-logo' }, 'No logo')),
      field('Favicon', faviconInput),
      h(
        'div',
        { class: 'checkbox' },
        removeFavicon,
        h('label', { for: 'remove-favicon' }, 'No separate favicon (use the logo)'),
      ),
    ),
    h(
      'div',
      { class: 'actions' },
      h('button', { type: 'button', onclick: () => load(undefined) }, 'New theme'),
      h('button', { type: 'submit' }, 'Save'),
      h('button', { type: 'button', class: 'primary', onclick: () => save(true) }, 'Save and activate'),
    ),
  )
  form.addEventListener('submit', (e) => {
    e.preventDefault()
    void save(false)
  })

  const list = h('ul', { class: 'themes', 'aria-label': 'Saved themes' })
  /** A small button of a saved theme's row; failures show the server's message. */
  const themeButton = (label, ariaLabel, className, action) =>
    h(
      'button',
      {
        type: 'button',
        class: className,
        'aria-label': ariaLabel,
        onclick: async () => {
          try {
            await action()
          } catch (err) {
            say(undefined, explain(err))
          }
        },
      },
      label,
    )

  const themeRow = (t) =>
    h(
      'li',
      { class: t.active ? 'theme active' : 'theme', 'data-theme': t.name },
      h('span', { class: 'swatch', 'aria-hidden': 'true', 'data-color': t.palette.primary }),
      h('span', { class: 'theme-name' }, t.name),
      h('span', { class: 'muted' }, t.site_name),
      t.active ? h('span', { class: 'badge authenticated' }, 'active') : null,
      themeButton('Edit', `Edit theme ${t.name}`, 'small', () => {
        load(t)
        name.focus()
      }),
      // The active theme can be neither re-activated nor deleted.
      t.active
        ? null
        : themeButton('Activate', `Activate theme ${t.name}`, 'small', async () => {
            data = await api('PUT', '/api/v1/admin/branding', { activate: t.name })
            say(`Theme ${t.name} is now active.`)
            applyToPage(data.themes.find((x) => x.name === t.name))
            renderList()
            // The pressed button is gone with the old row: stay on the same theme's row.
            keepFocus(list.querySelector(`li[data-theme="${t.name}"] button`) ?? list)
          }),
      t.active
        ? null
        : themeButton('Delete…', `Delete theme ${t.name}`, 'small danger', async () => {
            const ok = await confirmAction(
              `Delete theme ${t.name}?`,
              'The saved theme and its images are removed. The active theme is not affected.',
              'Delete theme',
            )
            if (!ok) return
            await api('DELETE', `/api/v1/admin/branding/themes/${t.name}`)
            data = await api('GET', '/api/v1/admin/branding')
            say(`Theme ${t.name} deleted.`)
            renderList()
            keepFocus(list)
          }),
    )

  const renderList = () => {
    fill(
      rules,
      `Images: ${data.limits.image_types.map((t) => t.replace('image/', '').toUpperCase()).join(', ')}; at most ${bytes(data.limits.max_image_bytes)} each. Without a favicon the logo is used as the favicon. At most ${data.limits.max_themes} saved themes (${data.themes.length} now).`,
    )
    fill(
      list,
      data.themes.length === 0
        ? h('li', { class: 'muted' }, 'No saved themes: the built-in look is in use.')
        : data.themes.map(themeRow),
    )
    // Swatch colours through the CSSOM: no inline style attributes under the CSP.
    for (const s of list.querySelectorAll('.swatch')) s.style.setProperty('background', s.dataset.color)
  }

  const section = h(
    'section',
    { class: 'panel', 'aria-labelledby': 'appearance-heading' },
    h('h2', { id: 'appearance-heading' }, 'Appearance'),
    h('h3', {}, 'Saved themes'),
    list,
    h('h3', {}, 'Edit a theme'),
    h(
      'div',
      { class: 'editor' },
      form,
      h(
        'div',
        { class: 'preview-col' },
        h('h4', {}, 'Live preview'),
        h(
          'div',
          { class: 'previews' },
          previews.map((p) =>
            h('figure', {}, p.box, h('figcaption', {}, p.scheme === 'light' ? 'Light mode' : 'Dark mode')),
          ),
        ),
        h(
          'p',
          { class: 'hint' },
          'Dark mode keeps the header. A light theme gets dark surfaces there and its accent lightened to stay readable; a dark theme looks the same in both.',
        ),
      ),
    ),
    status,
    alert,
  )
  api('GET', '/api/v1/admin/branding')
    .then((d) => {
      data = d
      renderList()
      load(data.themes.find((t) => t.active))
    })
    .catch((err) => say(undefined, `Could not load the themes: ${explain(err)}`))
  return section
}
