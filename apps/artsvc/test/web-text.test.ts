/**
 * User text is never markup, in Chromium: an artifact title, a share label, a display name
 * and the theme's site name and message that all look like HTML (with an event handler
 * that would record that it ran) show as the literal text on every page they reach — the
 * library, the share dialog, the viewer chrome, the shared view and /admin — and no element
 * is ever made of them.
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import type { Page } from '@gatehouse/testkit'
import { bearer, mustPublish } from './helpers/harness.ts'
import { shot, signIn, startUiRig, type UiRig } from './helpers/ui.ts'
import { buildZip } from './helpers/zip-builder.ts'

const MARK = `<img src="x" onerror="window.__ran=1"><b class="injected">bold</b> & "quoted"`
const NAME = `<i class="injected">Mallory</i>`

let rig: UiRig
before(async () => {
  rig = await startUiRig()
})
after(async () => {
  await rig?.close()
})

/** The page shows `text` literally and holds no element made from user text. */
async function literal(page: Page, text: string) {
  await page.getByText(text, { exact: false }).first().waitFor()
  assert.equal(await page.locator('.injected, img[src="x"]').count(), 0)
  assert.equal(await page.evaluate(() => (window as { __ran?: number }).__ran), undefined)
}

test('titles, labels, names and theme text that look like HTML stay text on every page', async () => {
  const owner = await bearer(rig.op, 'mallory')
  const published = await mustPublish(rig.h, owner, buildZip([{ name: 'index.html', data: '<p>content</p>' }]), {
    title: MARK,
  })
  const visible = await fetch(`${rig.h.base}/api/v1/artifacts/${published.artifact}/visibility`, {
    method: 'PUT',
    headers: { ...owner, 'content-type': 'application/json' },
    body: JSON.stringify({ visibility: 'authenticated' }),
  })
  assert.equal(visible.status, 200)
  const shared = await fetch(`${rig.h.base}/api/v1/artifacts/${published.artifact}/shares`, {
    method: 'POST',
    headers: { ...owner, 'content-type': 'application/json' },
    body: JSON.stringify({ label: MARK }),
  })
  assert.equal(shared.status, 201)
  const shareUrl = ((await shared.json()) as { url: string }).url
  const theme = await fetch(`${rig.h.base}/api/v1/admin/branding`, {
    method: 'PUT',
    headers: { ...(await bearer(rig.op, 'root-admin')), 'content-type': 'application/json' },
    body: JSON.stringify({
      theme: {
        name: 'marked',
        site_name: `<i class="injected">Site</i>`,
        message: MARK,
        palette: { primary: '#223344', background: '#ffffff', text: '#111111' },
      },
      activate: 'marked',
    }),
  })
  assert.equal(theme.status, 200, await theme.text())

  // The owner signs in (right after the bearer calls above) with a display name that looks like markup.
  const { context, page } = await signIn(rig, 'mallory', NAME)
  await literal(page, NAME)
  await literal(page, `<i class="injected">Site</i>`)
  await shot(page, 'text-library')
  await shot(page, 'text-library')
  const card = page.locator('[data-artifact]').filter({ hasText: 'quoted' }).first()
  await card.waitFor()
  assert.match(
    (await card.textContent())!,
    /<img src="x" onerror="window.__ran=1"><b class="injected">bold<\/b> & "quoted"/,
  )
  await page
    .getByRole('button', { name: /^Share / })
    .first()
    .click()
  const dialog = page.getByRole('dialog')
  await dialog.waitFor()
  await literal(page, MARK)
  await shot(page, 'text-share-dialog')
  await page.keyboard.press('Escape')

  await page.goto(`${rig.h.base}/a/${published.artifact}`)
  await literal(page, MARK)
  await literal(page, `by ${NAME}`)
  assert.equal(await page.title(), `${MARK} · <i class="injected">Site</i>`)
  await shot(page, 'text-viewer')
  await context.close()

  // Another account sees it among the artifacts visible to everyone.
  const other = await signIn(rig, 'olivia')
  await literal(other.page, MARK)
  await other.context.close()

  // The share link in a fresh context without an account.
  const anonymous = await rig.browser.newContext()
  const shareView = await anonymous.newPage()
  await shareView.goto(shareUrl)
  await literal(shareView, MARK)
  await anonymous.close()

  // The administrator's table.
  const admin = await signIn(rig, 'root-admin')
  await admin.page.goto(`${rig.h.base}/admin`)
  await literal(admin.page, MARK)
  await shot(admin.page, 'text-admin')
  await admin.context.close()
})
