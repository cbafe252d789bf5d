/**
 * /admin in Chromium against a real artsvc and the testkit OpenID provider: a
 * non-administrator gets no /admin; an administrator sees every artifact with owner and
 * active shares, revokes a share, soft-deletes an artifact after a confirmation, edits a
 * theme with a live preview (logo rules shown and enforced before upload), activates it and
 * sees it applied on every management page (library, viewer chrome, shared view, favicon)
 * but never inside the content sandbox; then switches and deletes saved themes.
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { bearer, mustPublish } from './helpers/harness.ts'
import { shot, signIn, solidPng, startUiRig, type UiRig, unlabelledControls } from './helpers/ui.ts'
import { webBundle } from './helpers/web-bundle.ts'
import { buildZip } from './helpers/zip-builder.ts'

let rig: UiRig

before(async () => {
  rig = await startUiRig()
})
after(async () => {
  await rig?.close()
})

async function share(artifact: string, owner: string, label: string) {
  const res = await fetch(`${rig.h.base}/api/v1/artifacts/${artifact}/shares`, {
    method: 'POST',
    headers: { ...(await bearer(rig.op, owner)), 'content-type': 'application/json' },
    body: JSON.stringify({ label }),
  })
  assert.equal(res.status, 201)
  return (await res.json()) as { id: string; url: string }
}

test('a non-administrator gets no /admin', async () => {
  const { context, page } = await signIn(rig, 'alice')
  assert.equal(await page.getByRole('link', { name: 'Admin' }).count(), 0)
  const res = await page.goto(`${rig.h.base}/admin`)
  assert.equal(res?.status(), 403)
  await page.getByRole('heading', { name: 'Administrators only' }).waitFor()
  assert.equal(await page.locator('script[src*="admin.js"]').count(), 0)
  assert.equal(await page.locator('#app').count(), 0)
  await shot(page, 'admin-refused')
  await context.close()

  // Signed out: /admin sends the browser to sign in first.
  const anonymous = await fetch(`${rig.h.base}/admin`, { redirect: 'manual' })
  assert.equal(anonymous.status, 302)
  assert.match(anonymous.headers.get('location')!, /^\/api\/v1\/auth\/login\?return_to=%2Fadmin$/)
})

test('an administrator revokes a share and soft-deletes an artifact after confirming', async () => {
  const alice = await bearer(rig.op, 'alice')
  const kept = await mustPublish(rig.h, alice, buildZip([{ name: 'index.html', data: 'q' }]), {
    title: 'Quarterly numbers',
  })
  const first = await share(kept.artifact, 'alice', 'board')
  await share(kept.artifact, 'alice', 'auditors')
  const doomed = await mustPublish(rig.h, alice, buildZip([{ name: 'index.html', data: 'd' }]), { title: 'Old draft' })
  const doomedShare = await share(doomed.artifact, 'alice', 'press')

  const { context, page } = await signIn(rig, 'root-admin', 'Root Admin')
  await page.getByRole('link', { name: 'Admin' }).click()
  await page.waitForURL(`${rig.h.base}/admin`)
  const row = page.locator(`tr[data-artifact="${kept.artifact}"]`)
  await row.waitFor()
  assert.match((await row.textContent())!, /Quarterly numbers.*alice.*private.*board.*auditors/)
  assert.deepEqual(await unlabelledControls(page), [])
  await shot(page, 'admin')
  await page.setViewportSize({ width: 390, height: 844 })
  await shot(page, 'admin-phone')
  await page.setViewportSize({ width: 1280, height: 860 })

  await row.getByRole('button', { name: 'Revoke share board of Quarterly numbers' }).click()
  await page.getByRole('status').filter({ hasText: 'Share board of “Quarterly numbers” revoked.' }).waitFor()
  await row.getByRole('button', { name: 'Revoke share board of Quarterly numbers' }).waitFor({ state: 'detached' })
  const shares = (await (
    await fetch(`${rig.h.base}/api/v1/artifacts/${kept.artifact}/shares`, { headers: alice })
  ).json()) as { shares: { id: string; status: string }[] }
  assert.equal(shares.shares.find((s) => s.id === first.id)?.status, 'revoked')

  // Cancel first: nothing happens.
  const doomedRow = page.locator(`tr[data-artifact="${doomed.artifact}"]`)
  // Named with its owner and version: two artifacts of one title have buttons a screen reader tells apart.
  assert.equal(
    await doomedRow.getByRole('button', { name: 'Delete Old draft' }).getAttribute('aria-label'),
    'Delete Old draft by alice, version 1',
  )
  await doomedRow.getByRole('button', { name: 'Delete Old draft' }).click()
  const confirm = page.getByRole('dialog', { name: 'Delete “Old draft”?' })
  assert.match((await confirm.textContent())!, /at once and its active share link stops working/)
  await shot(page, 'admin-confirm-delete')
  await confirm.getByRole('button', { name: 'Cancel' }).click()
  await confirm.waitFor({ state: 'detached' })
  assert.equal((await fetch(`${rig.h.base}/api/v1/artifacts/${doomed.artifact}`, { headers: alice })).status, 200)
  // Then confirm, from the keyboard: the dialog opens on Cancel, Tab reaches the
  // confirmation, and afterwards the focus stays in the table, not at the top of the page.
  await doomedRow.getByRole('button', { name: 'Delete Old draft' }).focus()
  await page.keyboard.press('Enter')
  await confirm.waitFor()
  const focusedText = () => page.evaluate(() => document.activeElement?.textContent ?? '')
  assert.equal(await focusedText(), 'Cancel')
  await page.keyboard.press('Tab')
  assert.equal(await focusedText(), 'Delete artifact')
  await page.keyboard.press('Enter')
  await page.getByRole('status').filter({ hasText: '“Old draft” deleted.' }).waitFor()
  await doomedRow.waitFor({ state: 'detached' })
  assert.equal(await focusedText(), '1 active artifact')
  assert.equal((await fetch(`${rig.h.base}/api/v1/artifacts/${doomed.artifact}`, { headers: alice })).status, 404)
  assert.equal((await fetch(doomedShare.url, { redirect: 'manual' })).status, 410)
  await context.close()
})

test('an administrator edits, previews and activates a theme; it applies everywhere but the sandbox', async () => {
  const alice = await bearer(rig.op, 'alice')
  const published = await mustPublish(rig.h, alice, webBundle(rig.h.base), { title: 'Themed app' })
  const link = await share(published.artifact, 'alice', 'themed')

  const { context, page } = await signIn(rig, 'root-admin')
  await page.goto(`${rig.h.base}/admin`)
  const editor = page.locator('form.theme-form')
  await page.locator('#image-rules').filter({ hasText: 'PNG, JPEG, WEBP; at most 512 KiB each' }).waitFor()
  await editor.getByLabel('Theme name').fill('acme')
  await editor.getByLabel('Site name').fill('Acme Reviews')
  await editor.getByLabel('Message', { exact: true }).fill('Internal previews: do not forward.')
  await editor.getByLabel('Primary (header, buttons)').fill('#aa3300')
  await editor.getByLabel('Background', { exact: true }).fill('#fff8f0')
  await editor.getByLabel('Text', { exact: true }).fill('#221100')
  await editor.getByLabel('Accent (links, focus)').fill('#005577')
  // Live preview follows the form before anything is saved.
  const preview = page.getByRole('group', { name: 'Light preview' })
  assert.equal(
    await preview.locator('.preview-header').evaluate((el) => getComputedStyle(el).backgroundColor),
    'rgb(170, 51, 0)',
  )
  assert.equal(await preview.locator('.site-name').textContent(), 'Acme Reviews')
  assert.equal(await preview.locator('.preview-message').textContent(), 'Internal previews: do not forward.')
  assert.equal(
    await page.locator('header.site').evaluate((el) => getComputedStyle(el).backgroundColor),
    'rgb(31, 79, 209)',
  )

  // The rules are enforced before upload: a GIF and an oversized PNG never leave the browser.
  let uploads = 0
  page.on('request', (r) => r.method() === 'PUT' && r.url().endsWith('/api/v1/admin/branding') && uploads++)
  await editor
    .getByLabel('Logo', { exact: true })
    .setInputFiles({ name: 'logo.gif', mimeType: 'image/gif', buffer: Buffer.from('GIF89a') })
  await page
    .locator('section[aria-labelledby="appearance-heading"] [role=alert]')
    .filter({ hasText: 'logo.gif cannot be the logo: use PNG, JPEG or WebP' })
    .waitFor()
  const big = Buffer.concat([solidPng(4, [0, 0, 0]), Buffer.alloc(600 * 1024)])
  await editor
    .getByLabel('Logo', { exact: true })
    .setInputFiles({ name: 'big.png', mimeType: 'image/png', buffer: big })
  await page
    .locator('section[aria-labelledby="appearance-heading"] [role=alert]')
    .filter({ hasText: /big\.png cannot be the logo: it is 60\d(\.\d)? KiB, the limit is 512 KiB/ })
    .waitFor()
  await editor
    .getByLabel('Logo', { exact: true })
    .setInputFiles({ name: 'logo.png', mimeType: 'image/png', buffer: solidPng(32, [255, 200, 0]) })
  await editor
    .getByLabel('Favicon', { exact: true })
    .setInputFiles({ name: 'icon.png', mimeType: 'image/png', buffer: solidPng(16, [0, 85, 119]) })
  await preview.locator('img.logo').waitFor()
  assert.deepEqual(await unlabelledControls(page), [])
  await shot(page, 'admin-appearance-preview')

  await editor.getByRole('button', { name: 'Save and activate' }).click()
  await page.getByRole('status').filter({ hasText: 'Theme acme saved and active.' }).waitFor()
  assert.equal(uploads, 1)
  // Applied to this page at once.
  await page.locator('header.site .site-name').filter({ hasText: 'Acme Reviews' }).waitFor()
  await page.waitForFunction(
    () => getComputedStyle(document.querySelector('header.site')!).backgroundColor === 'rgb(170, 51, 0)',
  )
  assert.match((await page.locator('link[rel=icon]').getAttribute('href'))!, /\/branding\/images\/[0-9a-f]{64}$/)
  await page.locator('.theme[data-theme="acme"] .badge', { hasText: 'active' }).waitFor()
  assert.equal(await preview.locator('.preview-message').isVisible(), true)
  await shot(page, 'admin-appearance-active')

  // Everywhere on the management origin: alice's library and viewer, and the account-less shared view.
  const other = await signIn(rig, 'alice')
  const p = other.page
  assert.equal(await p.locator('header.site').evaluate((el) => getComputedStyle(el).backgroundColor), 'rgb(170, 51, 0)')
  assert.equal(await p.locator('body').evaluate((el) => getComputedStyle(el).backgroundColor), 'rgb(255, 248, 240)')
  assert.equal(await p.locator('.site-message').textContent(), 'Internal previews: do not forward.')
  assert.equal(await p.title(), 'Library · Acme Reviews')
  assert.equal(await p.locator('header.site img.logo').evaluate((img) => (img as HTMLImageElement).naturalWidth), 32)
  await shot(p, 'library-themed')
  await p.goto(`${rig.h.base}/a/${published.artifact}`)
  assert.equal(await p.locator('header.site').evaluate((el) => getComputedStyle(el).backgroundColor), 'rgb(170, 51, 0)')
  const frame = p.frameLocator('#artifact')
  await frame.locator('#result').filter({ hasNotText: 'pending' }).waitFor()
  // Inside the sandbox the bundle keeps its own look: no theme variable, colour or stylesheet.
  assert.equal(await frame.locator('h1').evaluate((el) => getComputedStyle(el).color), 'rgb(1, 2, 3)')
  assert.equal(await frame.locator('body').evaluate((el) => getComputedStyle(el).backgroundColor), 'rgba(0, 0, 0, 0)')
  assert.equal(
    await frame.locator('html').evaluate((el) => getComputedStyle(el).getPropertyValue('--brand-primary')),
    '',
  )
  assert.equal(await frame.locator('link[href*="branding"]').count(), 0)
  await shot(p, 'viewer-themed')
  await p.setViewportSize({ width: 390, height: 844 })
  await shot(p, 'viewer-phone')
  await other.context.close()

  const guest = await rig.browser.newContext()
  const g = await guest.newPage()
  await g.goto(link.url)
  assert.equal(await g.locator('header.site').evaluate((el) => getComputedStyle(el).backgroundColor), 'rgb(170, 51, 0)')
  assert.equal(await g.locator('header.site .site-name').textContent(), 'Acme Reviews')
  await guest.close()

  // The saved-theme selector: a second theme saved without activating, activated, the first deleted.
  await editor.getByRole('button', { name: 'New theme' }).click()
  await editor.getByLabel('Theme name').fill('plain')
  await editor.getByLabel('Site name').fill('Plain Site')
  // A light primary colour: header text turns dark to stay readable (preview and site alike).
  await editor.getByLabel('Primary (header, buttons)').fill('#ffd54a')
  assert.equal(await preview.locator('.preview-header').evaluate((el) => getComputedStyle(el).color), 'rgb(0, 0, 0)')
  await editor.getByRole('button', { name: 'Save', exact: true }).click()
  await page.getByRole('status').filter({ hasText: 'Theme plain saved.' }).waitFor()
  assert.equal(
    await page.locator('header.site .site-name').textContent(),
    'Acme Reviews',
    'saving alone does not activate',
  )
  assert.equal(
    await page.getByRole('button', { name: 'Delete theme acme' }).count(),
    0,
    'the active theme cannot be deleted',
  )
  await page.getByRole('button', { name: 'Activate theme plain' }).click()
  await page.locator('header.site .site-name').filter({ hasText: 'Plain Site' }).waitFor()
  await page.waitForFunction(
    () => getComputedStyle(document.querySelector('header.site .brand')!).color === 'rgb(0, 0, 0)',
  )
  await shot(page, 'admin-light-theme')
  await page.getByRole('button', { name: 'Delete theme acme' }).click()
  await page.getByRole('dialog', { name: 'Delete theme acme?' }).getByRole('button', { name: 'Delete theme' }).click()
  await page.locator('.theme[data-theme="acme"]').waitFor({ state: 'detached' })
  const branding = (await (
    await fetch(`${rig.h.base}/api/v1/admin/branding`, { headers: await bearer(rig.op, 'root-admin') })
  ).json()) as { active: string; themes: { name: string }[] }
  assert.equal(branding.active, 'plain')
  assert.deepEqual(
    branding.themes.map((t) => t.name),
    ['plain'],
  )
  await context.close()
})
