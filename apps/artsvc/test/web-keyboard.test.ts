/**
 * Every dialog and confirmation of the management pages walked with the keyboard alone in
 * Chromium (Tab, Shift+Tab, Enter, Escape): the sharing dialog (create, revoke, give and
 * remove access), the admin's confirmations (delete an artifact, delete a theme) and theme
 * activation; and publishing a folder on a phone. Focus stays inside an open dialog, goes back
 * to the button that opened it, and never falls to the page when the button a user pressed is
 * rebuilt away or busy.
 */
import assert from 'node:assert/strict'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { type Page, tempDir } from '@gatehouse/testkit'
import { bearer, mustPublish } from './helpers/harness.ts'
import { shot, signIn, startUiRig, type UiRig } from './helpers/ui.ts'
import { buildZip } from './helpers/zip-builder.ts'

let rig: UiRig
before(async () => {
  rig = await startUiRig()
})
after(async () => {
  await rig?.close()
})

/** What has focus: its accessible label (aria-label, else its text), and whether it is inside an open dialog. */
function focused(page: Page) {
  return page.evaluate(() => {
    const el = document.activeElement as HTMLElement | null
    const label =
      el?.getAttribute('aria-label') ??
      ((el as HTMLInputElement | null)?.labels?.[0]?.textContent || el?.textContent || '').trim()
    return { tag: el?.tagName.toLowerCase() ?? '', label, inDialog: !!el?.closest('dialog[open]') }
  })
}

/** Press Tab until the control named `label` has focus (as a keyboard user would). */
async function tabTo(page: Page, label: string, key = 'Tab') {
  const seen: string[] = []
  for (let i = 0; i < 80; i++) {
    await page.keyboard.press(key)
    const now = await focused(page)
    if (now.label === label) return
    seen.push(now.label)
  }
  assert.fail(`${label} is not reachable with ${key}; reached: ${seen.join(' | ')}`)
}

test('the sharing dialog with the keyboard alone: create and revoke a link, give and remove access', async () => {
  const alice = await bearer(rig.op, 'alice')
  await mustPublish(rig.h, alice, buildZip([{ name: 'index.html', data: 'k' }]), { title: 'Keyboard page' })
  // bob has signed in once, so he can be given access.
  await fetch(`${rig.h.base}/api/v1/me`, { headers: await bearer(rig.op, 'bob') })
  const { context, page } = await signIn(rig, 'alice')
  await page.locator('.card h3', { hasText: 'Keyboard page' }).waitFor()

  await tabTo(page, 'Share Keyboard page')
  await page.keyboard.press('Enter')
  const dialog = page.getByRole('dialog', { name: 'Share “Keyboard page”' })
  await dialog.waitFor()
  assert.equal((await focused(page)).inDialog, true, 'focus moves into the dialog')
  // Focus never reaches the page behind the modal dialog, forwards or backwards (past its last
  // control Chromium visits its own toolbar, the document's body here, then comes back).
  const outside = () =>
    page.evaluate(() => document.activeElement !== document.body && !document.activeElement?.closest('dialog[open]'))
  for (let i = 0; i < 30; i++) {
    await page.keyboard.press('Tab')
    assert.equal(await outside(), false, `Tab ${i + 1} stays off the page behind`)
  }
  for (let i = 0; i < 10; i++) {
    await page.keyboard.press('Shift+Tab')
    assert.equal(await outside(), false, `Shift+Tab ${i + 1} stays off the page behind`)
  }

  // A new link: type a label, submit with Enter; the link (shown once) takes focus.
  await tabTo(page, 'Label (optional)')
  await page.keyboard.type('keyboard')
  await page.keyboard.press('Enter')
  await dialog.getByLabel('Share link (shown once)').waitFor()
  assert.equal((await focused(page)).label, 'Share link (shown once)')

  // Revoke it: the row is rebuilt without its button, and focus stays in the dialog on the list.
  await tabTo(page, 'Revoke share keyboard')
  await page.keyboard.press('Enter')
  await dialog.locator('.shares li', { hasText: 'keyboard' }).locator('.badge.revoked').waitFor()
  await page.waitForFunction(() => document.activeElement?.getAttribute('aria-label') === 'Shares')
  assert.deepEqual(await focused(page), { tag: 'ul', label: 'Shares', inDialog: true })

  // Give bob access and take it away again.
  await tabTo(page, 'Account')
  await page.keyboard.type('bob')
  await page.keyboard.press('Enter')
  await dialog.getByRole('button', { name: 'Remove access of bob' }).waitFor()
  await tabTo(page, 'Remove access of bob')
  await page.keyboard.press('Enter')
  await dialog.getByText('Nobody else has private access.').waitFor()
  await page.waitForFunction(() => document.activeElement?.tagName === 'UL')
  assert.equal((await focused(page)).inDialog, true, 'focus stays in the dialog after a removal')
  await shot(page, 'keyboard-share-dialog')

  // Escape closes it and focus goes back to the button that opened it.
  await page.keyboard.press('Escape')
  await dialog.waitFor({ state: 'detached' })
  assert.equal((await focused(page)).label, 'Share Keyboard page')
  await context.close()
})

test("the admin's confirmations and theme buttons with the keyboard alone", async () => {
  const admin = await bearer(rig.op, 'root-admin')
  const palette = { primary: '#224466', background: '#ffffff', text: '#111111', accent: '#224466' }
  for (const [name, activate] of [
    ['kb-first', true],
    ['kb-second', false],
    ['kb-third', false],
  ] as const) {
    const res = await fetch(`${rig.h.base}/api/v1/admin/branding`, {
      method: 'PUT',
      headers: { ...admin, 'content-type': 'application/json' },
      body: JSON.stringify({
        theme: { name, site_name: 'Keyboard site', palette },
        ...(activate ? { activate: name } : {}),
      }),
    })
    assert.equal(res.status, 200, await res.text())
  }
  const doomed = await mustPublish(
    rig.h,
    await bearer(rig.op, 'alice'),
    buildZip([{ name: 'index.html', data: 'd' }]),
    {
      title: 'Keyboard doomed',
    },
  )
  const { context, page } = await signIn(rig, 'root-admin')
  await page.goto(`${rig.h.base}/admin`)
  await page.locator('li[data-theme="kb-second"]').waitFor()

  // Activate a theme: its row is rebuilt, focus stays on that theme's row.
  await tabTo(page, 'Activate theme kb-second')
  await page.keyboard.press('Enter')
  await page.locator('li.theme.active[data-theme="kb-second"]').waitFor()
  await page.waitForFunction(() => document.activeElement !== document.body)
  assert.equal((await focused(page)).label, 'Edit theme kb-second')

  // Delete a theme: the confirmation opens on Cancel; Escape keeps the theme and returns focus.
  await tabTo(page, 'Delete theme kb-third')
  await page.keyboard.press('Enter')
  const confirm = page.getByRole('dialog', { name: 'Delete theme kb-third?' })
  await confirm.waitFor()
  assert.deepEqual(await focused(page), { tag: 'button', label: 'Cancel', inDialog: true })
  await page.keyboard.press('Escape')
  await confirm.waitFor({ state: 'detached' })
  assert.equal((await focused(page)).label, 'Delete theme kb-third')
  assert.equal(await page.locator('li[data-theme="kb-third"]').count(), 1)
  // Again, and confirm from the keyboard: focus lands on the list, not the page.
  await page.keyboard.press('Enter')
  await confirm.waitFor()
  await page.keyboard.press('Tab')
  assert.equal((await focused(page)).label, 'Delete theme')
  await page.keyboard.press('Enter')
  await page.locator('li[data-theme="kb-third"]').waitFor({ state: 'detached' })
  await page.waitForFunction(() => document.activeElement !== document.body)
  assert.deepEqual(await focused(page), { tag: 'ul', label: 'Saved themes', inDialog: false })

  // Delete an artifact: Cancel first, then confirm; focus goes to the table, not the page.
  await tabTo(page, 'Delete Keyboard doomed by alice, version 1', 'Shift+Tab')
  await page.keyboard.press('Enter')
  const sure = page.getByRole('dialog', { name: 'Delete “Keyboard doomed”?' })
  await sure.waitFor()
  await page.keyboard.press('Enter')
  await sure.waitFor({ state: 'detached' })
  assert.equal(
    (await focused(page)).label,
    'Delete Keyboard doomed by alice, version 1',
    'Cancel returns to the button',
  )
  await page.keyboard.press('Enter')
  await sure.waitFor()
  await page.keyboard.press('Tab')
  await page.keyboard.press('Enter')
  await page.locator(`tr[data-artifact="${doomed.artifact}"]`).waitFor({ state: 'detached' })
  await page.waitForFunction(() => document.activeElement !== document.body)
  assert.equal((await focused(page)).inDialog, false)
  await shot(page, 'keyboard-admin')
  await context.close()
})

test('publish a folder with the keyboard alone on a phone: the focus lands on the result, once', async (t) => {
  const dir = tempDir('artsvc-keyboard-folder-')
  t.after(() => dir.remove())
  mkdirSync(join(dir.path, 'notes', 'css'), { recursive: true })
  writeFileSync(join(dir.path, 'notes', 'index.html'), '<h1 id="t">pocket notes</h1>')
  writeFileSync(join(dir.path, 'notes', 'css', 'a.css'), 'h1{color:teal}')
  const { context, page } = await signIn(rig, 'hugo')
  await page.setViewportSize({ width: 390, height: 844 })
  let uploads = 0
  page.on('request', (r) => r.method() === 'PUT' && r.url().includes('/upload/') && uploads++)

  await tabTo(page, 'Publish…')
  await page.keyboard.press('Enter')
  // Listening for the chooser turns on Chromium's interception of it, and Playwright sends that
  // without waiting: started just before the key press, a loaded machine let the press open the
  // (headless, invisible) chooser first and no event came. Started before tabbing, it is in place.
  const choosing = page.waitForEvent('filechooser')
  await tabTo(page, 'Folder')
  await page.keyboard.press('Enter')
  const chooser = await choosing
  await chooser.setFiles(join(dir.path, 'notes'))
  // The bundle is read: the title (the folder's name) has focus, ready to be typed over.
  await page.waitForFunction(() => (document.activeElement as HTMLInputElement | null)?.value === 'notes')
  assert.equal((await focused(page)).label, 'Title')
  await page.keyboard.press('ControlOrMeta+A')
  await page.keyboard.type('Pocket notes')
  await tabTo(page, 'Publish')
  await page.keyboard.press('Enter')
  await page.getByRole('status').filter({ hasText: 'Published version 1 of “Pocket notes”' }).waitFor()
  // The pressed button was busy during the upload, not disabled (which drops the focus to the
  // page's body); then the focus goes to the result.
  await page.waitForFunction(() => document.activeElement?.textContent === 'Open it')
  assert.deepEqual(await focused(page), { tag: 'a', label: 'Open it', inDialog: false })
  assert.equal(uploads, 1)
  // The bundle is spent: submitting the form again publishes nothing more.
  assert.equal(await page.getByRole('button', { name: 'Publish', exact: true }).isVisible(), false)
  await page.locator('form.publish').evaluate((f) => (f as HTMLFormElement).requestSubmit())
  await page.getByRole('link', { name: 'Pocket notes' }).waitFor()
  const mine = (await (
    await fetch(`${rig.h.base}/api/v1/artifacts`, { headers: await bearer(rig.op, 'hugo') })
  ).json()) as { artifacts: { title: string }[] }
  assert.deepEqual(
    mine.artifacts.map((a) => a.title),
    ['Pocket notes'],
  )
  assert.equal(uploads, 1)
  await shot(page, 'keyboard-publish-phone')

  await page.keyboard.press('Enter')
  await page.waitForURL(/\/a\/[A-Za-z0-9_-]{16}$/)
  assert.equal(await page.frameLocator('#artifact').locator('#t').textContent(), 'pocket notes')
  await tabTo(page, 'Open in new tab')
  await context.close()
})

test('the version switcher with the arrow keys: each version opens and the focus stays on the switcher', async () => {
  const ivy = await bearer(rig.op, 'ivy')
  const page1 = (n: number) => buildZip([{ name: 'index.html', data: `<h1 id="n">edition ${n}</h1>` }])
  const first = await mustPublish(rig.h, ivy, page1(1), { title: 'Editions' })
  await mustPublish(rig.h, ivy, page1(2), { title: 'Editions', artifact: first.artifact })
  await mustPublish(rig.h, ivy, page1(3), { title: 'Editions', artifact: first.artifact })
  const { context, page } = await signIn(rig, 'ivy')
  await page.setViewportSize({ width: 390, height: 844 })
  await page.goto(`${rig.h.base}/a/${first.artifact}`)
  const edition = () => page.frameLocator('#artifact').locator('#n').textContent()
  assert.equal(await edition(), 'edition 3')
  await tabTo(page, 'Version')
  for (const n of [2, 1]) {
    await page.keyboard.press('ArrowDown')
    await page.waitForURL(`${rig.h.base}/a/${first.artifact}?version=${n}`)
    assert.equal(await edition(), `edition ${n}`)
    await page.waitForFunction(() => document.activeElement?.id === 'version-select')
    assert.equal((await focused(page)).label, 'Version')
  }
  // Back up with the other arrow, and on to the rest of the page with Tab.
  await page.keyboard.press('ArrowUp')
  await page.waitForURL(`${rig.h.base}/a/${first.artifact}?version=2`)
  await page.waitForFunction(() => document.activeElement?.id === 'version-select')
  await page.keyboard.press('Tab')
  assert.equal((await focused(page)).label, 'Show')
  // Arriving from elsewhere (a link, a reload) starts at the top as usual.
  await page.goto(`${rig.h.base}/a/${first.artifact}?version=1`)
  assert.equal(await page.evaluate(() => document.activeElement === document.body), true)
  await context.close()
})
