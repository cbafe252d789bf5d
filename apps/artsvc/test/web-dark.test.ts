/**
 * The management pages in the dark scheme (prefers-color-scheme), against a real artsvc and the
 * testkit OpenID provider in Chromium: every main screen (sign-in, library, publish and sharing
 * dialogs, viewer, share viewer and its refusal, /admin with its confirmation, the 403 and 404
 * pages) has no text under WCAG AA contrast in light and dark, at laptop and phone sizes, and a
 * visible focus ring (3:1 against what is behind it) on the header and on the page; then an
 * active light theme keeps its header in the dark scheme with its own accent lightened (same
 * hue) to read there, and a dark theme is dark in both; the theme editor previews both looks.
 * Screenshots: test-output/dark-*.png.
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { type Page, unreadableText } from '@gatehouse/testkit'
import { DARK_SURFACES, darkAccent, toHsl } from '../src/ui/theme.ts'
import { bearer, mustPublish } from './helpers/harness.ts'
import { dropFile, shot, signIn, startUiRig, type UiRig } from './helpers/ui.ts'
import { webBundle } from './helpers/web-bundle.ts'
import { buildZip } from './helpers/zip-builder.ts'

type Locator = ReturnType<Page['locator']>

let rig: UiRig

before(async () => {
  rig = await startUiRig()
})
after(async () => {
  await rig?.close()
})

const SIZES = {
  laptop: { width: 1280, height: 800 },
  phone: { width: 390, height: 844 },
} as const

/** The page's own background luminance (WCAG), to tell which palette applies. */
function pageLuminance(page: Page): Promise<number> {
  return page.evaluate(() => {
    const bg = getComputedStyle(document.body).backgroundColor
    const k = bg.startsWith('color(srgb') ? 255 : 1
    const [r, g, b] = (bg.match(/[\d.]+/g) ?? []).map((v) => Number(v) * k)
    const lin = (v: number) => {
      const s = v / 255
      return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4
    }
    return 0.2126 * lin(r ?? 0) + 0.7152 * lin(g ?? 0) + 0.0722 * lin(b ?? 0)
  })
}

/**
 * The screen as it is, in light then dark, at both sizes: no unreadable text, the palette the
 * scheme asks for (unless a theme fixes it), and a dark screenshot of each size.
 */
async function checkScreen(page: Page, name: string, expectDark: { light: boolean; dark: boolean } = DEFAULT) {
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme })
    for (const [size, viewport] of Object.entries(SIZES)) {
      await page.setViewportSize(viewport)
      assert.deepEqual(await unreadableText(page), [], `${name}, ${scheme}, ${size}`)
      const luminance = await pageLuminance(page)
      assert.equal(luminance < 0.05, expectDark[scheme], `${name}, ${scheme}: page luminance ${luminance.toFixed(3)}`)
      if (scheme === 'dark') await shot(page, `dark-${name}-${size}`)
    }
  }
  await page.emulateMedia({ colorScheme: 'dark' })
  await page.setViewportSize(SIZES.laptop)
}
const DEFAULT = { light: false, dark: true }

/**
 * The focused element's ring: drawn (an outline of 2px or more) and 3:1 or more against the
 * nearest painted background behind the element (WCAG 1.4.11; the ring sits just outside it).
 */
function focusRing(page: Page): Promise<{ what: string; ratio: number; outline: string }> {
  return page.evaluate(() => {
    type Rgba = [number, number, number, number]
    // rgb()/rgba(), or color(srgb …) with 0-1 channels (what color-mix() computes to).
    const parse = (c: string): Rgba => {
      const n = (c.match(/[\d.]+/g) ?? []).map(Number)
      const k = c.startsWith('color(srgb') ? 255 : 1
      return [(n[0] ?? 0) * k, (n[1] ?? 0) * k, (n[2] ?? 0) * k, n[3] ?? 1]
    }
    const over = (top: Rgba, under: Rgba): Rgba =>
      [0, 1, 2].map((i) => top[i]! * top[3] + under[i]! * (1 - top[3])).concat(1) as Rgba
    const root = getComputedStyle(document.documentElement)
    const canvas = parse(root.backgroundColor)
    const backdrop = (el: Element | null): Rgba => {
      if (!el) return canvas[3] === 0 ? [255, 255, 255, 1] : canvas
      const bg = parse(getComputedStyle(el).backgroundColor)
      if (bg[3] === 0) return backdrop(el.parentElement)
      return bg[3] === 1 ? bg : over(bg, backdrop(el.parentElement))
    }
    const lum = (c: Rgba) => {
      const [r, g, b] = [c[0], c[1], c[2]].map((v) => {
        const s = v / 255
        return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4
      })
      return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!
    }
    const el = document.activeElement as HTMLElement
    const what = `${el.localName}${el.id ? `#${el.id}` : ''} "${(el.textContent ?? '').trim().slice(0, 30)}"`
    const s = getComputedStyle(el)
    if (!el.matches(':focus-visible') || s.outlineStyle === 'none' || Number.parseFloat(s.outlineWidth) < 2)
      return { what, ratio: 0, outline: `${s.outlineStyle} ${s.outlineWidth}` }
    const ring = parse(s.outlineColor)
    const behind = backdrop(el.parentElement)
    const [x, y] = [lum(ring[3] === 1 ? ring : over(ring, behind)), lum(behind)].sort((p, q) => q - p)
    return { what, ratio: (x! + 0.05) / (y! + 0.05), outline: `${s.outlineColor} on rgb(${behind.slice(0, 3)})` }
  })
}

/** Focus each control from the keyboard's side (after a Tab, so :focus-visible applies) and check its ring. */
async function checkRings(page: Page, controls: Locator[]) {
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme })
    for (const control of controls) {
      await page.keyboard.press('Tab')
      await control.focus()
      const ring = await focusRing(page)
      assert.ok(ring.ratio >= 3, `${scheme}: focus ring of ${ring.what}: ${ring.ratio.toFixed(2)}:1 (${ring.outline})`)
    }
  }
  await page.emulateMedia({ colorScheme: 'dark' })
}

/** Hue distance in degrees, around the circle. */
const hueGap = (a: number, b: number) => Math.min(Math.abs(a - b), 360 - Math.abs(a - b))
const rgb = (hex: string) => `rgb(${[1, 3, 5].map((i) => Number.parseInt(hex.slice(i, i + 2), 16)).join(', ')})`

/** Save a theme and make it the active one. */
async function saveActive(name: string, palette: Record<string, string>) {
  const res = await fetch(`${rig.h.base}/api/v1/admin/branding`, {
    method: 'PUT',
    headers: { ...(await bearer(rig.op, 'root-admin')), 'content-type': 'application/json' },
    body: JSON.stringify({
      theme: { name, site_name: `Acme ${name}`, message: 'Internal previews: do not forward.', palette },
      activate: name,
    }),
  })
  assert.equal(res.status, 200, await res.text())
}

async function createShare(artifact: string, owner: string, label: string) {
  const res = await fetch(`${rig.h.base}/api/v1/artifacts/${artifact}/shares`, {
    method: 'POST',
    headers: { ...(await bearer(rig.op, owner)), 'content-type': 'application/json' },
    body: JSON.stringify({ label }),
  })
  assert.equal(res.status, 201)
  return (await res.json()) as { id: string; url: string }
}

test('the sign-in page and the not-found page, light and dark', async () => {
  const context = await rig.browser.newContext()
  const page = await context.newPage()
  await page.goto(`${rig.h.base}/`)
  await page.getByRole('heading', { name: 'Sign in' }).waitFor()
  await checkScreen(page, 'sign-in')
  await checkRings(page, [page.locator('a.brand'), page.getByRole('link', { name: 'Sign in' })])
  await page.goto(`${rig.h.base}/no/such/page`)
  await page.getByRole('heading', { name: 'Page not found' }).waitFor()
  await checkScreen(page, 'not-found')
  await context.close()
})

test('library, publish and sharing dialogs, viewer, share viewer and its refusal, light and dark', async () => {
  const dana = await bearer(rig.op, 'dana')
  const app = await mustPublish(rig.h, dana, webBundle(rig.h.base), { title: 'Night build' })
  await mustPublish(rig.h, dana, webBundle(rig.h.base), { title: 'Night build', artifact: app.artifact })
  const open = await mustPublish(rig.h, dana, buildZip([{ name: 'index.html', data: '<p>open</p>' }]), {
    title: 'Team handbook',
  })
  const visible = await fetch(`${rig.h.base}/api/v1/artifacts/${open.artifact}/visibility`, {
    method: 'PUT',
    headers: { ...dana, 'content-type': 'application/json' },
    body: '{"visibility":"authenticated"}',
  })
  assert.equal(visible.status, 200)
  const revoked = await createShare(app.artifact, 'dana', 'old link')
  const gone = await fetch(`${rig.h.base}/api/v1/artifacts/${app.artifact}/shares/${revoked.id}`, {
    method: 'DELETE',
    headers: dana,
  })
  assert.ok(gone.ok)

  const { context, page } = await signIn(rig, 'dana', 'Dana Night')
  await page.emulateMedia({ colorScheme: 'dark' })
  const card = page.locator('.card', { hasText: 'Night build' })
  await card.getByRole('button', { name: /Details/ }).click()
  await card.locator('.card-details').waitFor()
  await checkScreen(page, 'library')
  await checkRings(page, [
    page.locator('a.brand'),
    page.getByRole('button', { name: 'Sign out' }),
    page.getByRole('button', { name: 'Publish…' }),
    page.getByLabel('Search by title'),
    card.getByRole('link', { name: 'Night build' }),
  ])

  // Publish: a bundle dropped, its entrypoint choice and title filled in; then a refusal shown.
  await page.getByRole('button', { name: 'Publish…' }).click()
  await dropFile(page, '.dropzone', 'dark.zip', webBundle(rig.h.base), 'application/zip')
  await page.getByLabel('Entrypoint', { exact: true }).waitFor()
  await checkScreen(page, 'publish')
  // On a phone the file choosers stay inside the drop zone (they used to spill past its border).
  await page.setViewportSize(SIZES.phone)
  const spill = await page.evaluate(() => {
    const zone = document.querySelector('.dropzone')!.getBoundingClientRect()
    return [...document.querySelectorAll('.dropzone input[type=file]')]
      .map((i) => i.getBoundingClientRect())
      .filter((r) => r.left < zone.left || r.right > zone.right)
      .map((r) => `${r.left}-${r.right} outside ${zone.left}-${zone.right}`)
  })
  assert.deepEqual(spill, [])
  await page.setViewportSize(SIZES.laptop)
  const dup = buildZip([
    { name: 'index.html', data: '<h1>one</h1>' },
    { name: 'INDEX.html', data: '<h1>two</h1>' },
  ])
  await dropFile(page, '.dropzone', 'dup.zip', dup, 'application/zip')
  await page.getByLabel('Title', { exact: true }).fill('Broken')
  await page.locator('form.publish').getByRole('button', { name: 'Publish' }).click()
  await page.locator('form.publish [role=alert]').filter({ hasText: 'Not published' }).waitFor()
  await checkScreen(page, 'publish-error')
  await page.reload()

  // Sharing: a grant refused (the server's message), a link created and shown once, the list.
  await page.getByRole('button', { name: 'Share Night build' }).click()
  const dialog = page.getByRole('dialog', { name: 'Share “Night build”' })
  await dialog.getByLabel('Label (optional)').fill('reviewers')
  await dialog.getByRole('button', { name: 'Create link' }).click()
  await dialog.getByLabel('Share link (shown once)').waitFor()
  await checkScreen(page, 'share-dialog')
  await checkRings(page, [dialog.getByRole('button', { name: 'Copy link' }), dialog.getByLabel('Label (optional)')])
  const link = await dialog.getByLabel('Share link (shown once)').inputValue()
  await page.keyboard.press('Escape')

  // The viewer: its chrome follows the scheme, the published content keeps its own white canvas.
  await page.goto(`${rig.h.base}/a/${app.artifact}`)
  await page.frameLocator('#artifact').locator('#result').filter({ hasNotText: 'pending' }).waitFor()
  await checkScreen(page, 'viewer')
  await checkRings(page, [page.getByLabel('Version'), page.getByRole('link', { name: 'Open in new tab' })])
  assert.equal(
    await page.locator('#artifact').evaluate((f) => getComputedStyle(f).backgroundColor),
    'rgb(255, 255, 255)',
    "the bundle's canvas is not themed",
  )
  await context.close()

  const guest = await rig.browser.newContext()
  const guestPage = await guest.newPage()
  await guestPage.goto(link)
  await guestPage.frameLocator('#artifact').locator('#result').filter({ hasNotText: 'pending' }).waitFor()
  await checkScreen(guestPage, 'share-viewer')
  const refused = await guestPage.goto(revoked.url)
  assert.equal(refused?.status(), 410)
  await guestPage.getByRole('heading', { name: 'No longer available' }).waitFor()
  await checkScreen(guestPage, 'share-refused')
  await guest.close()
})

test('/admin with its confirmation and the appearance editor, and the 403 page, light and dark', async () => {
  const erin = await bearer(rig.op, 'erin')
  const p = await mustPublish(rig.h, erin, buildZip([{ name: 'index.html', data: 'x' }]), { title: 'Ops report' })
  await createShare(p.artifact, 'erin', 'board')

  const { context: refusedContext, page: refusedPage } = await signIn(rig, 'erin')
  const refused = await refusedPage.goto(`${rig.h.base}/admin`)
  assert.equal(refused?.status(), 403)
  await checkScreen(refusedPage, 'admin-refused')
  await refusedContext.close()

  const { context, page } = await signIn(rig, 'root-admin', 'Root Admin')
  await page.goto(`${rig.h.base}/admin`)
  const row = page.locator(`tr[data-artifact="${p.artifact}"]`)
  await row.waitFor()
  await page.locator('form.theme-form').getByLabel('Theme name').fill('night')
  await checkScreen(page, 'admin')
  await checkRings(page, [
    page.getByRole('link', { name: 'Admin' }),
    row.getByRole('button', { name: 'Delete Ops report' }),
    page.locator('form.theme-form').getByLabel('Theme name'),
  ])
  await row.getByRole('button', { name: 'Delete Ops report' }).click()
  const confirm = page.getByRole('dialog', { name: 'Delete “Ops report”?' })
  await confirm.waitFor()
  await checkScreen(page, 'admin-confirm')
  await checkRings(page, [confirm.getByRole('button', { name: 'Cancel' })])
  await confirm.getByRole('button', { name: 'Cancel' }).click()
  await context.close()
})

test('an active light theme keeps its header in the dark scheme; a dark theme is dark in both', async () => {
  await mustPublish(rig.h, await bearer(rig.op, 'fay'), buildZip([{ name: 'index.html', data: 'f' }]), {
    title: 'Themed notes',
  })
  // A light theme whose accent (dark green) was picked for a light page.
  await saveActive('daylight', { primary: '#0b6e4f', background: '#fbfaf5', text: '#202020', accent: '#0b6e4f' })
  const { context, page } = await signIn(rig, 'fay')
  await page.locator('.card', { hasText: 'Themed notes' }).waitFor()
  await checkScreen(page, 'themed-light')
  const header = () => page.locator('header.site').evaluate((h) => getComputedStyle(h).backgroundColor)
  await page.emulateMedia({ colorScheme: 'dark' })
  assert.equal(await header(), 'rgb(11, 110, 79)', "the theme's header in the dark scheme")
  await checkRings(page, [page.locator('a.brand'), page.getByRole('button', { name: 'Publish…' })])
  // Links and focus rings keep the theme's green, lightened for the dark page, not the built-in blue.
  const accent = () =>
    page.evaluate(() => getComputedStyle(document.documentElement).getPropertyValue('--brand-accent').trim())
  assert.equal(await accent(), darkAccent('#0b6e4f'))
  assert.ok(hueGap(toHsl(await accent())[0], toHsl('#0b6e4f')[0]) <= 2, await accent())
  await page.emulateMedia({ colorScheme: 'light' })
  assert.equal(await accent(), '#0b6e4f', 'the light scheme keeps the accent as set')

  // A strong brand red on white: its accent stays red in the dark scheme and every text reads.
  await saveActive('signal', { primary: '#c8102e', background: '#ffffff', text: '#1a1a1a', accent: '#c8102e' })
  await page.reload()
  await page.locator('.card', { hasText: 'Themed notes' }).waitFor()
  await checkScreen(page, 'themed-brand')
  await page.emulateMedia({ colorScheme: 'dark' })
  assert.ok(hueGap(toHsl(await accent())[0], toHsl('#c8102e')[0]) <= 2, await accent())
  assert.equal(
    await page.locator('.card a', { hasText: 'Themed notes' }).evaluate((a) => getComputedStyle(a).color),
    rgb(darkAccent('#c8102e')),
  )
  await checkRings(page, [page.getByLabel('Search by title'), page.locator('.card a', { hasText: 'Themed notes' })])

  // A dark theme: dark surfaces and status colours in both schemes, its own header.
  await saveActive('midnight', { primary: '#f2b705', background: '#101418', text: '#e8e6e3', accent: '#f2b705' })
  await page.reload()
  await page.locator('.card', { hasText: 'Themed notes' }).waitFor()
  await checkScreen(page, 'themed-dark', { light: true, dark: true })
  await page.emulateMedia({ colorScheme: 'light' })
  assert.equal(await header(), 'rgb(242, 183, 5)')
  await checkRings(page, [page.locator('a.brand'), page.getByRole('button', { name: 'Publish…' })])
  await context.close()
})

test('the theme editor previews the light and the dark look side by side, from the keyboard', async () => {
  // The page around the editor in a light theme (light, and dark in the dark scheme).
  await saveActive('paper', { primary: '#1f4fd1', background: '#ffffff', text: '#1b1f29', accent: '#1f4fd1' })
  const { context, page } = await signIn(rig, 'root-admin', 'Root Admin')
  await page.goto(`${rig.h.base}/admin`)
  const editor = page.locator('form.theme-form')
  await page.locator('#image-rules').filter({ hasText: 'PNG' }).waitFor()
  const light = page.getByRole('group', { name: 'Light preview' })
  const dark = page.getByRole('group', { name: 'Dark preview' })
  const look = (preview: Locator) =>
    preview.evaluate((box) => {
      const link = box.querySelector('a')!
      const header = box.querySelector('.preview-header')!
      return {
        background: getComputedStyle(box).backgroundColor,
        text: getComputedStyle(box).color,
        link: getComputedStyle(link).color,
        header: getComputedStyle(header).backgroundColor,
      }
    })

  // Keyboard only: type the name, then each colour field reached with Tab and typed into.
  await editor.getByLabel('Theme name').focus()
  await page.keyboard.press('ControlOrMeta+A')
  await page.keyboard.type('harbour')
  await page.keyboard.press('Tab')
  await page.keyboard.press('ControlOrMeta+A')
  await page.keyboard.type('Harbour Docs')
  const colours: [string, string][] = [
    ['Primary (header, buttons)', '#7a1f5c'],
    ['Background', '#fffdf7'],
    ['Text', '#2b2118'],
    ['Accent (links, focus)', '#8c2f39'],
  ]
  for (const [label, value] of colours) {
    const input = editor.getByLabel(label, { exact: true })
    while (!(await input.evaluate((el) => el === document.activeElement))) await page.keyboard.press('Tab')
    // A colour input takes no typing in headless Chromium: set it as the picker would.
    await input.fill(value)
  }
  assert.deepEqual(await look(light), {
    background: 'rgb(255, 253, 247)',
    text: 'rgb(43, 33, 24)',
    link: 'rgb(140, 47, 57)',
    header: 'rgb(122, 31, 92)',
  })
  assert.deepEqual(await look(dark), {
    background: rgb(DARK_SURFACES.background),
    text: 'rgb(230, 233, 239)',
    link: rgb(darkAccent('#8c2f39')),
    header: 'rgb(122, 31, 92)',
  })
  // Both looks in view together, beside the colour being edited, on a laptop.
  for (const preview of [light, dark]) assert.ok(await preview.evaluate(inView), 'preview in view')
  // The previews hold no tab stop: the next Tab goes on through the form.
  await page.keyboard.press('Tab')
  assert.equal(await page.evaluate(() => document.activeElement?.closest('.theme-preview') ?? null), null)
  await checkScreen(page, 'editor-previews')
  await page.setViewportSize(SIZES.laptop)
  await page.emulateMedia({ colorScheme: 'light' })
  await light.scrollIntoViewIfNeeded()
  await shot(page, 'editor-previews-light-laptop')

  // A dark theme looks the same in both previews.
  await editor.getByLabel('Background', { exact: true }).fill('#101418')
  await editor.getByLabel('Text', { exact: true }).fill('#e8e6e3')
  assert.deepEqual(await look(dark), await look(light))
  await context.close()
})

/** The element wholly inside the viewport. */
function inView(el: Element): boolean {
  const r = el.getBoundingClientRect()
  return r.top >= 0 && r.left >= 0 && r.bottom <= innerHeight && r.right <= innerWidth
}
