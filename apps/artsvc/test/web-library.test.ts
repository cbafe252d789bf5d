/**
 * The library in Chromium against a real artsvc and the testkit OpenID provider: sign in,
 * publish a bundle by drag-and-drop (progress, entrypoint, the server's reason on a bad
 * bundle), view it (module script, WASM and localStorage in the sandbox), share it, open
 * the share in a fresh context without an account, revoke it and see it stop; labels on
 * every control and a library that works with the keyboard. Screenshots: test-output/.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { type Page, tempDir } from '@gatehouse/testkit'
import { bearer, mustPublish } from './helpers/harness.ts'
import { dropFile, dropFromDisk, shot, signIn, startUiRig, type UiRig, unlabelledControls } from './helpers/ui.ts'
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
  const script = await fetch(`${rig.h.base}/static/app/library.js`)
  assert.equal(script.headers.get('content-type'), 'text/javascript; charset=utf-8')
  const etag = script.headers.get('etag')!
  const again = await fetch(`${rig.h.base}/static/app/library.js`, { headers: { 'if-none-match': etag } })
  assert.equal(again.status, 304)
  assert.equal((await fetch(`${rig.h.base}/static/app/nope.js`)).status, 404)
  assert.equal((await fetch(`${rig.h.base}/static/app/..%2Fpackage.json`)).status, 400)
  const csp = (await page.request.get(page.url())).headers()['content-security-policy']!
  assert.match(csp, /script-src 'self'/)
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/)
  await shot(page, 'viewer')
  await context.close()
})

test('the progress bar follows a slow upload', async () => {
  const { context, page } = await signIn(rig, 'paula')
  // 1.5 MB of incompressible bytes over a link throttled to 1 MB/s: the upload takes a while.
  const big = buildZip([
    { name: 'index.html', data: '<p>big</p>' },
    { name: 'noise.bin', data: randomBytes(1_500_000), method: 0 },
  ])
  const cdp = await context.newCDPSession(page)
  await cdp.send('Network.enable')
  await cdp.send('Network.emulateNetworkConditions', {
    offline: false,
    latency: 0,
    downloadThroughput: -1,
    uploadThroughput: 1024 * 1024,
  })
  await page.getByRole('button', { name: 'Publish…' }).click()
  await dropFile(page, '.dropzone', 'big.zip', big, 'application/zip')
  await page.getByLabel('Entrypoint', { exact: true }).waitFor()
  await page.evaluate(() => {
    const seen: number[] = []
    ;(window as unknown as { seen: number[] }).seen = seen
    const bar = document.querySelector('progress')!
    new MutationObserver(() => seen.push(bar.value)).observe(bar, { attributes: true, attributeFilter: ['value'] })
  })
  await page.locator('form.publish').getByRole('button', { name: 'Publish' }).click()
  await page.getByRole('status').filter({ hasText: 'Published version 1' }).waitFor()
  const seen = await page.evaluate(() => (window as unknown as { seen: number[] }).seen)
  assert.ok(
    seen.some((v) => v > 0 && v < 100),
    `intermediate progress seen: ${seen.join(',')}`,
  )
  assert.deepEqual(
    [...seen].sort((a, b) => a - b),
    seen,
    'progress never goes back',
  )
  assert.equal(seen.at(-1), 100)
  await cdp.detach()
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
    { name: 'index.html', data: '<p>not this one</p>' },
    { name: 'site/about.html', data: '<p>about</p>' },
    { name: 'site/start.html', data: '<h1 id="v">two</h1>' },
  ])
  // A file the previous version does not have as its entrypoint: index.html is offered first.
  await dropFile(page, 'dialog .dropzone', 'v2.zip', v2, 'application/zip')
  await dialog.getByLabel('Entrypoint', { exact: true }).waitFor() // shown once the bundle is read
  assert.equal(await dialog.getByLabel('Entrypoint', { exact: true }).inputValue(), 'index.html')
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

test('share from the dialog, open it without an account, revoke it and see it stop', async () => {
  const published = await mustPublish(rig.h, await bearer(rig.op, 'carol'), webBundle(rig.h.base), {
    title: 'Shareable',
  })
  const { context, page } = await signIn(rig, 'carol')
  await page.getByRole('button', { name: 'Share Shareable' }).click()
  const dialog = page.getByRole('dialog', { name: 'Share “Shareable”' })
  assert.equal(await dialog.getByLabel('Shows').inputValue(), '1', 'pinned to the newest version by default')
  await dialog.getByLabel('View limit (optional)').fill('5')
  await dialog.getByLabel('Label (optional)').fill('reviewers')
  await dialog.getByRole('button', { name: 'Create link' }).click()
  const link = dialog.getByLabel('Share link (shown once)')
  await link.waitFor()
  const url = await link.inputValue()
  assert.match(url, new RegExp(`^${rig.h.base}/s/[A-Za-z0-9_-]{43}$`))
  const row = dialog.locator('.shares li', { hasText: 'reviewers' })
  assert.match((await row.textContent())!, /active.*version 1 · 0 of 5 views/)
  assert.deepEqual(await unlabelledControls(page), [])
  await shot(page, 'share-dialog')
  await page.setViewportSize({ width: 390, height: 844 })
  await shot(page, 'share-dialog-phone')
  await page.setViewportSize({ width: 1280, height: 860 })

  // A fresh context: no account, no session.
  const guest = await rig.browser.newContext()
  const guestPage = await guest.newPage()
  await guestPage.goto(url)
  assert.equal(new URL(guestPage.url()).pathname.startsWith('/shared/'), true)
  const result = await frameResult(guestPage)
  assert.equal(result.wasm, 5)
  assert.equal(result.storage, '1')
  assert.match((await guestPage.locator('.viewer-bar').textContent())!, /Shareable.*by carol.*shared view/)
  assert.equal(await guestPage.locator('#sign-out').count(), 0)
  await shot(guestPage, 'shared-view')

  await row.getByRole('button', { name: 'Revoke share reviewers' }).click()
  await dialog.getByRole('status').filter({ hasText: 'revoked' }).waitFor()
  await dialog.locator('.shares li.revoked', { hasText: 'reviewers' }).waitFor()
  const again = await guestPage.reload()
  assert.equal(again?.status(), 410)
  await guestPage.getByRole('heading', { name: 'No longer available' }).waitFor()
  await shot(guestPage, 'shared-revoked')
  await guest.close()

  // Private access for one account: it must have signed in once, then it is listed for them.
  await dialog.getByLabel('Account', { exact: true }).fill('nobody-yet')
  await dialog.getByRole('button', { name: 'Give access' }).click()
  await dialog.getByRole('alert').filter({ hasText: 'users must sign in once' }).waitFor()
  const henry = await signIn(rig, 'henry')
  await dialog.getByLabel('Account', { exact: true }).fill('henry')
  await dialog.getByLabel('Access', { exact: true }).selectOption('viewer')
  await dialog.getByRole('button', { name: 'Give access' }).click()
  await dialog.getByRole('status').filter({ hasText: 'henry is now a viewer.' }).waitFor()
  await dialog.locator('.grants li', { hasText: 'henry' }).waitFor()
  await henry.page.reload()
  await henry.page.locator('section[aria-labelledby="group-shared"] .card', { hasText: 'Shareable' }).waitFor()
  await dialog.getByRole('button', { name: 'Remove access of henry' }).click()
  await dialog.getByRole('status').filter({ hasText: 'henry no longer has access.' }).waitFor()
  await henry.page.reload()
  await henry.page
    .locator('section[aria-labelledby="group-shared"]')
    .getByText('Nobody has granted you access')
    .waitFor()
  await henry.context.close()

  // Visibility from the same dialog: everyone signed in now sees it.
  await dialog.getByLabel('Everyone who signs in to this site').check()
  await dialog.getByRole('status').filter({ hasText: 'everyone signed in' }).waitFor()
  const other = await signIn(rig, 'dave')
  await other.page.locator('#group-everyone').waitFor()
  await other.page.locator('section[aria-labelledby="group-everyone"] .card', { hasText: 'Shareable' }).waitFor()
  await other.context.close()
  const listed = (await (
    await fetch(`${rig.h.base}/api/v1/artifacts/${published.artifact}`, { headers: await bearer(rig.op, 'carol') })
  ).json()) as { visibility: string }
  assert.equal(listed.visibility, 'authenticated')
  await context.close()
})

test('the library works with the keyboard and every control has a label', async () => {
  const erin = await bearer(rig.op, 'erin')
  await mustPublish(rig.h, erin, buildZip([{ name: 'index.html', data: '<p>a</p>' }]), { title: 'Alpha report' })
  await mustPublish(rig.h, erin, buildZip([{ name: 'index.html', data: '<p>b</p>' }]), { title: 'Beta dashboard' })
  const { context, page } = await signIn(rig, 'erin')
  await page.locator('.card').first().waitFor()
  assert.deepEqual(await unlabelledControls(page), [])
  await page.getByRole('button', { name: 'Publish…' }).click()
  assert.deepEqual(await unlabelledControls(page), [])
  await page.getByRole('button', { name: 'Publish…' }).click()

  // Tab from the top of the page to the search box, type, and the list narrows.
  const focused = () =>
    page.evaluate(
      () => document.activeElement?.getAttribute('aria-label') ?? document.activeElement?.textContent?.trim() ?? '',
    )
  const tabTo = async (test: () => Promise<boolean>, limit = 30) => {
    for (let i = 0; i < limit; i++) {
      if (await test()) return
      await page.keyboard.press('Tab')
    }
    assert.fail('focus never reached the control with Tab')
  }
  await page.locator('body').focus()
  await tabTo(() => page.evaluate(() => document.activeElement?.getAttribute('type') === 'search'))
  await page.keyboard.type('beta')
  // (Other tests' artifacts visible to everyone may be listed too: count only erin's.)
  await page
    .getByRole('status')
    .filter({ hasText: /^1 of \d+ artifacts match “beta”/ })
    .waitFor()
  const mine = page.locator('section[aria-labelledby="group-mine"] .card')
  assert.deepEqual(await mine.locator('h3').allTextContents(), ['Beta dashboard'])
  // On to the card's details with Tab, open them with Enter.
  await tabTo(async () => (await focused()) === 'Details of Beta dashboard')
  await page.keyboard.press('Enter')
  const details = page.locator('.card', { hasText: 'Beta dashboard' }).locator('.card-details')
  await details.getByRole('list', { name: 'Versions of Beta dashboard' }).waitFor()
  assert.equal(
    await page.getByRole('button', { name: 'Details of Beta dashboard' }).getAttribute('aria-expanded'),
    'true',
  )
  // The share dialog opens from the keyboard and Escape closes it.
  await page.keyboard.press('Shift+Tab')
  await tabTo(async () => (await focused()) === 'Share Beta dashboard')
  await page.keyboard.press('Enter')
  await page.getByRole('dialog').waitFor()
  await page.keyboard.press('Escape')
  await page.getByRole('dialog').waitFor({ state: 'detached' })
  // Sorting by title from the keyboard.
  await page.getByLabel('Search by title').fill('')
  await page.getByLabel('Sort').focus()
  await page.keyboard.press('ArrowDown')
  await page.keyboard.press('ArrowDown')
  assert.equal(await page.getByLabel('Sort').inputValue(), 'title')
  assert.deepEqual(await mine.locator('h3').allTextContents(), ['Alpha report', 'Beta dashboard'])

  await page.setViewportSize({ width: 390, height: 844 })
  await shot(page, 'library-phone')
  await context.close()
})

test('publish a folder with the folder picker and by dropping it from disk; a new version keeps the previous entrypoint', async () => {
  const dir = tempDir('artsvc-folder-')
  try {
    mkdirSync(join(dir.path, 'site', 'assets'), { recursive: true })
    writeFileSync(join(dir.path, 'site', 'home.html'), '<h1 id="v">folder</h1><script src="assets/app.js"></script>')
    writeFileSync(join(dir.path, 'site', 'assets', 'app.js'), "document.title = 'from folder'")
    writeFileSync(join(dir.path, 'site', '.artsvc.json'), '{"url":"x","artifact":"y"}')
    const { context, page } = await signIn(rig, 'gina')
    await page.getByRole('button', { name: 'Publish…' }).click()
    await page.getByLabel('Folder', { exact: true }).setInputFiles(join(dir.path, 'site'))
    const entry = page.getByLabel('Entrypoint', { exact: true })
    await entry.waitFor()
    // The CLI's link file is never uploaded.
    assert.deepEqual(await entry.locator('option').allTextContents(), ['assets/app.js', 'home.html'])
    assert.equal(await entry.inputValue(), 'home.html')
    assert.equal(await page.getByLabel('Title', { exact: true }).inputValue(), 'site')
    await page.locator('form.publish').getByRole('button', { name: 'Publish' }).click()
    await page.getByRole('status').filter({ hasText: 'Published version 1 of “site”' }).waitFor()
    await page.getByRole('link', { name: 'Open it' }).click()
    assert.equal(await page.frameLocator('#artifact').locator('#v').textContent(), 'folder')

    // The same folder dropped from disk: it arrives as a directory and is zipped in the browser.
    await page.goto(`${rig.h.base}/`)
    await page.getByRole('button', { name: 'Publish…' }).click()
    await dropFromDisk(page, '.dropzone', [join(dir.path, 'site')])
    await page.getByLabel('Entrypoint', { exact: true }).waitFor()
    assert.deepEqual(await page.getByLabel('Entrypoint', { exact: true }).locator('option').allTextContents(), [
      'assets/app.js',
      'home.html',
    ])
    assert.match((await page.locator('form.publish [role=status]').textContent())!, /^folder site: 2 files/)
    await page.getByLabel('Title', { exact: true }).fill('Dropped folder')
    await page.locator('form.publish').getByRole('button', { name: 'Publish' }).click()
    await page.getByRole('status').filter({ hasText: 'Published version 1 of “Dropped folder”' }).waitFor()

    await page.goto(`${rig.h.base}/`)
    await page.getByRole('button', { name: 'Publish a new version of site' }).click()
    const dialog = page.getByRole('dialog')
    await dropFile(
      page,
      'dialog .dropzone',
      'v2.zip',
      buildZip([
        { name: 'index.html', data: 'i' },
        { name: 'home.html', data: '<h1 id="v">again</h1>' },
      ]),
      'application/zip',
    )
    await dialog.getByLabel('Entrypoint', { exact: true }).waitFor() // shown once the bundle is read
    assert.equal(await dialog.getByLabel('Entrypoint', { exact: true }).inputValue(), 'home.html')

    // Bad input from the share dialog gets the server's reason and creates nothing.
    await dialog.getByRole('button', { name: 'Close' }).click()
    await page.getByRole('button', { name: 'Share site' }).click()
    const share = page.getByRole('dialog')
    await share.getByLabel('Expires (optional)').fill('2020-01-01T10:00')
    await share.getByRole('button', { name: 'Create link' }).click()
    await share.getByRole('alert').filter({ hasText: 'expires_at must be an RFC 3339 time in the future' }).waitFor()
    assert.equal(await share.locator('.shares li.share').count(), 0)
    await context.close()
  } finally {
    dir.remove()
  }
})

test('refusals in the browser are themed pages; API clients keep the JSON error', async () => {
  const { context, page } = await signIn(rig, 'ivan')
  const missing = await page.goto(`${rig.h.base}/a/AAAAAAAAAAAAAAAA`)
  assert.equal(missing?.status(), 404)
  await page.getByRole('heading', { name: 'Not found' }).waitFor()
  assert.equal(await page.locator('[data-code]').getAttribute('data-code'), 'artifact_not_found')
  assert.equal(await page.locator('header.site .who').textContent(), 'ivan')
  const cookie = (await context.cookies(rig.h.base)).find((c) => c.name === 'artsvc_session')!
  const api = await fetch(`${rig.h.base}/a/AAAAAAAAAAAAAAAA`, { headers: { cookie: `artsvc_session=${cookie.value}` } })
  assert.equal(api.status, 404)
  assert.equal(((await api.json()) as { error: { code: string } }).error.code, 'artifact_not_found')
  const unknownShare = await page.goto(`${rig.h.base}/s/${'x'.repeat(43)}`)
  assert.equal(unknownShare?.status(), 404)
  await page.getByText('no such share').waitFor()
  // A link cut short when copied: a page in words, not the id's schema pattern.
  const cut = await page.goto(`${rig.h.base}/a/AAAAAAAA`)
  assert.equal(cut?.status(), 400)
  await page.getByRole('heading', { name: 'Not a valid link' }).waitFor()
  const said = (await page.locator('[data-code]').textContent()) ?? ''
  assert.match(said, /copied whole/)
  assert.doesNotMatch(said, /params|pattern|\^/)
  await shot(page, 'invalid-link')
  const cutApi = await fetch(`${rig.h.base}/a/AAAAAAAA`, { headers: { cookie: `artsvc_session=${cookie.value}` } })
  assert.equal(cutApi.status, 400, 'API clients keep the JSON error')
  assert.match(((await cutApi.json()) as { error: { message: string } }).error.message, /pattern/)
  await context.close()
})

test('mutations from another origin are refused even with the session cookie', async () => {
  const { context, page } = await signIn(rig, 'frank')
  const published = await mustPublish(
    rig.h,
    await bearer(rig.op, 'frank'),
    buildZip([{ name: 'index.html', data: 'x' }]),
  )
  const cookie = (await context.cookies(rig.h.base)).find((c) => c.name === 'artsvc_session')!
  const res = await fetch(`${rig.h.base}/api/v1/artifacts/${published.artifact}/shares`, {
    method: 'POST',
    headers: {
      cookie: `artsvc_session=${cookie.value}`,
      origin: 'http://evil.example',
      'content-type': 'application/json',
    },
    body: '{}',
  })
  assert.equal(res.status, 403)
  assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'origin_mismatch')
  // Signing out from the header ends the session.
  await page.getByRole('button', { name: 'Sign out' }).click()
  await page.getByRole('heading', { name: 'Sign in' }).waitFor()
  assert.equal(
    (await context.cookies(rig.h.base)).some((c) => c.name === 'artsvc_session'),
    false,
  )
  await context.close()
})

test('a long title in one word wraps on a phone: library card, share dialog and viewer stay on screen', async () => {
  const title = 'Quarterly_revenue_forecast_for_the_northern_region_2026_final_v3'
  const published = await mustPublish(
    rig.h,
    await bearer(rig.op, 'frank'),
    buildZip([{ name: 'index.html', data: 'q' }]),
    { title },
  )
  const { context, page } = await signIn(rig, 'frank')
  await page.setViewportSize({ width: 375, height: 740 })
  const sideways = () =>
    page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth)
  await page.locator('.card h3', { hasText: title }).waitFor()
  assert.equal(await sideways(), 0, 'the library does not scroll sideways')
  await page.getByRole('button', { name: `Share ${title}` }).click()
  const heading = page.getByRole('dialog').getByRole('heading', { name: `Share “${title}”` })
  const box = (await heading.boundingBox())!
  assert.ok(box.x + box.width <= 375, `the dialog's title fits the screen (${JSON.stringify(box)})`)
  await shot(page, 'long-title-share-phone')
  await page.keyboard.press('Escape')
  await page.goto(`${rig.h.base}/a/${published.artifact}`)
  await page.locator('.viewer-bar .artifact-title').waitFor()
  assert.equal(await sideways(), 0, 'the viewer does not scroll sideways')
  await shot(page, 'long-title-viewer-phone')
  await page.goto(`${rig.h.base}/`)
  await page.locator('.card h3', { hasText: title }).waitFor()
  await shot(page, 'long-title-library-phone')
  await context.close()
})
