/**
 * Chromium against a real artsvc and the testkit OpenID provider: sign in through the
 * provider, open /a/{artifact}, and check the bundle really runs in the sandboxed frame
 * (module scripts with relative imports, WASM by fetch, localStorage) while staying
 * isolated (opaque origin, no cookies, no requests to the management origin). Then the
 * share flow, and a ticket URL opened directly (the CSP sandbox still applies).
 */
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { type Browser, freePort, launchChromium, type OidcProvider, startOidcProvider } from '@gatehouse/testkit'
import { AUDIENCE, bearer, type Harness, mustPublish, SCOPE, startArtsvc } from './helpers/harness.ts'
import { OUTPUT } from './helpers/ui.ts'
import { webBundle } from './helpers/web-bundle.ts'

let op: OidcProvider
let h: Harness
let browser: Browser

before(async () => {
  const port = await freePort()
  op = await startOidcProvider({
    redirectUris: [`http://127.0.0.1:${port}/api/v1/auth/oidc/callback`],
    audience: AUDIENCE,
    scopes: [SCOPE],
  })
  h = await startArtsvc({ op, port })
  browser = await launchChromium()
})
after(async () => {
  await browser?.close()
  await h?.close()
  await op?.stop()
})

interface Result {
  module: string
  origin: string
  storage: string
  cookie: string
  wasm: number | string
  escape: string
}

async function frameResult(page: import('@gatehouse/testkit').Page): Promise<Result> {
  const frame = page.frameLocator('#artifact')
  await frame.locator('#result').filter({ hasNotText: 'pending' }).waitFor({ timeout: 20_000 })
  return JSON.parse((await frame.locator('#result').textContent())!) as Result
}

test('signed-in viewing in Chromium: sandboxed frame runs modules, WASM and localStorage', async () => {
  const p = await mustPublish(h, await bearer(op, 'alice'), webBundle(h.base), { title: 'Web app' })
  op.loginAs('alice')
  const context = await browser.newContext()
  const page = await context.newPage()
  const response = await page.goto(`${h.base}/a/${p.artifact}`)
  assert.equal(response?.status(), 200)
  assert.equal(new URL(page.url()).pathname, `/a/${p.artifact}`)
  const cookies = await context.cookies(h.base)
  const session = cookies.find((c) => c.name === 'artsvc_session')
  assert.ok(session, 'session cookie set by the OIDC callback')
  assert.equal(session.httpOnly, true)
  assert.equal(session.secure, true)
  const iframe = page.locator('#artifact')
  assert.equal(
    await iframe.getAttribute('sandbox'),
    'allow-scripts allow-forms allow-popups allow-modals allow-downloads',
  )
  assert.ok((await iframe.getAttribute('src'))!.startsWith(`${h.content}/t/`))
  const result = await frameResult(page)
  assert.equal(result.module, 'hello sandbox')
  assert.equal(result.wasm, 5)
  assert.equal(result.storage, '1')
  assert.equal(result.origin, 'null', 'the frame has an opaque origin')
  assert.match(result.cookie, /^(|threw SecurityError)$/)
  assert.equal(result.escape, 'blocked', 'CSP keeps the bundle off the management origin')
  const color = await page
    .frameLocator('#artifact')
    .locator('h1')
    .evaluate((el) => getComputedStyle(el).color)
  assert.equal(color, 'rgb(1, 2, 3)')
  await context.close()
})

test('a ticket URL opened directly is still sandboxed by its CSP and still works', async () => {
  const p = await mustPublish(h, await bearer(op, 'alice'), webBundle(h.base), { title: 'Direct' })
  const html = await (await fetch(`${h.base}/a/${p.artifact}`, { headers: await bearer(op, 'alice') })).text()
  const frameUrl = /<iframe[^>]*src="([^"]+)"/.exec(html)![1]!.replaceAll('&amp;', '&')
  const context = await browser.newContext()
  const page = await context.newPage()
  await page.goto(frameUrl)
  await page.locator('#result').filter({ hasNotText: 'pending' }).waitFor({ timeout: 20_000 })
  const result = JSON.parse((await page.locator('#result').textContent())!) as Result
  assert.equal(result.origin, 'null')
  assert.equal(result.wasm, 5)
  assert.equal(result.storage, '1')
  assert.equal(await page.evaluate(() => self.origin), 'null')
  await context.close()
})

test('share links in Chromium: /s/ sets the share session, /shared/ shows the pinned version', async () => {
  const alice = await bearer(op, 'alice')
  const p = await mustPublish(h, alice, webBundle(h.base), { title: 'Shared app' })
  const share = (await (
    await fetch(`${h.base}/api/v1/artifacts/${p.artifact}/shares`, {
      method: 'POST',
      headers: { ...alice, 'content-type': 'application/json' },
      body: '{}',
    })
  ).json()) as { id: string; url: string }
  const context = await browser.newContext()
  const page = await context.newPage()
  await page.goto(share.url)
  assert.equal(new URL(page.url()).pathname, `/shared/${share.id}/`)
  assert.match((await page.locator('.viewer-bar').textContent())!, /shared view/)
  const result = await frameResult(page)
  assert.equal(result.wasm, 5)
  const cookies = await context.cookies(`${h.base}/shared/${share.id}/`)
  assert.ok(cookies.some((c) => c.name === 'artsvc_share' && c.httpOnly && c.path === `/shared/${share.id}`))
  await context.close()
})

test("an unknown address in the browser: the site's own 404 page; API paths and the content origin keep JSON", async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
  const page = await context.newPage()
  const path = '/no/such/<page>?secret=abc'
  const response = await page.goto(`${h.base}${path}`)
  assert.equal(response?.status(), 404)
  const headers = response!.headers()
  assert.match(headers['content-type']!, /^text\/html/)
  assert.match(headers['content-security-policy']!, /^default-src 'none'; script-src 'self'/)
  assert.equal(headers['x-frame-options'], 'DENY')
  assert.equal(headers['cache-control'], 'no-store')
  await page.getByRole('heading', { name: 'Page not found' }).waitFor()
  const html = await response!.text()
  assert.ok(!html.includes('no/such') && !html.includes('secret'), 'the path is not echoed')
  assert.ok(!html.includes('<script'), 'no script at all on this page')
  // The site's stylesheet applies, and the way home works from the keyboard.
  assert.equal(await page.locator('header.site').evaluate((el) => getComputedStyle(el).display), 'flex')
  const home = page.getByRole('link', { name: 'Go to the library' })
  assert.equal(await home.getAttribute('href'), '/')
  await home.focus()
  await page.keyboard.press('Enter')
  await page.waitForURL(`${h.base}/`)
  await page.getByRole('heading', { name: 'Sign in' }).waitFor()
  await page.goto(`${h.base}/nowhere`)
  await page.screenshot({ path: `${OUTPUT}/not-found-laptop.png` })
  await page.setViewportSize({ width: 390, height: 844 })
  await page.screenshot({ path: `${OUTPUT}/not-found-phone.png` })
  assert.equal(
    await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth),
    0,
  )
  // Signed in, the header shows who and the library link.
  op.loginAs('alice')
  await page.goto(`${h.base}/`)
  await page.getByRole('link', { name: 'Sign in' }).click()
  await page.waitForURL(`${h.base}/`)
  await page.goto(`${h.base}/nowhere`)
  await page.getByRole('heading', { name: 'Page not found' }).waitFor()
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Library' }).waitFor()
  // A browser at an API, MCP or upload address, and at the content origin, gets the coded JSON.
  for (const [url, code] of [
    [`${h.base}/api/v1/nothing`, 'not_found'],
    [`${h.base}/mcp/nothing`, 'not_found'],
    [`${h.base}/upload`, 'not_found'],
    [`${h.content}/nowhere`, 'wrong_origin'],
    [`${h.content}/s/abc`, 'wrong_origin'],
    [`${h.content}/a/abc`, 'wrong_origin'],
  ] as const) {
    const r = await page.goto(url)
    assert.equal(r?.status(), 404, url)
    assert.match(r!.headers()['content-type']!, /^application\/json/, url)
    assert.equal(((await r!.json()) as { error: { code: string } }).error.code, code, url)
  }
  // fetch() and curl (no text/html in Accept) keep the JSON, and so does any other method.
  const plain = await fetch(`${h.base}/nowhere`)
  assert.equal(plain.status, 404)
  assert.equal(((await plain.json()) as { error: { code: string } }).error.code, 'not_found')
  const post = await fetch(`${h.base}/nowhere`, { method: 'POST', headers: { accept: 'text/html' } })
  assert.match(post.headers.get('content-type')!, /^application\/json/)
  const head = await fetch(`${h.base}/nowhere`, { method: 'HEAD', headers: { accept: 'text/html' } })
  assert.equal(head.status, 404)
  assert.match(head.headers.get('content-type')!, /^text\/html/)
  assert.ok(head.headers.get('content-security-policy'))
  await context.close()
})

test('the share viewer on a phone and a laptop: the frame fills the screen below a compact bar', async () => {
  const alice = await bearer(op, 'alice')
  const title = 'Quarterly revenue dashboard for the northern region, every department and cost centre by month'
  const p = await mustPublish(h, alice, webBundle(h.base), { title })
  await mustPublish(h, alice, webBundle(h.base), { title, artifact: p.artifact })
  const share = (await (
    await fetch(`${h.base}/api/v1/artifacts/${p.artifact}/shares`, {
      method: 'POST',
      headers: { ...alice, 'content-type': 'application/json' },
      body: '{}',
    })
  ).json()) as { url: string }
  const layout = (page: import('@gatehouse/testkit').Page) =>
    page.evaluate(() => {
      const box = (sel: string) => document.querySelector(sel)!.getBoundingClientRect()
      const title = document.querySelector('.artifact-title')!
      return {
        sideways: document.documentElement.scrollWidth - document.documentElement.clientWidth,
        downwards: document.documentElement.scrollHeight - document.documentElement.clientHeight,
        viewport: window.innerHeight,
        frameTop: box('#artifact').top,
        frameBottom: box('#artifact').bottom,
        titleLines: Math.round(box('.artifact-title').height / Number.parseFloat(getComputedStyle(title).lineHeight)),
        bar: box('.viewer-bar').height,
        button: box('.viewer-bar .button'),
      }
    })
  const context = await browser.newContext({ viewport: { width: 390, height: 844 } })
  const page = await context.newPage()
  await page.goto(share.url)
  await frameResult(page)
  const phone = await layout(page)
  assert.equal(phone.sideways, 0, 'nothing scrolls sideways')
  assert.equal(phone.downwards, 0, 'the page itself does not scroll: the frame does')
  assert.equal(Math.round(phone.frameBottom), phone.viewport, 'the frame reaches the bottom of the screen')
  assert.ok(
    phone.viewport - phone.frameTop >= 0.8 * phone.viewport,
    `the frame keeps most of the screen (${phone.frameTop})`,
  )
  assert.ok(phone.titleLines <= 2, `a long title takes two lines at most (${phone.titleLines})`)
  assert.ok(phone.button.height >= 24 && phone.button.right <= 390, 'Open in new tab is a whole, tappable target')
  // The title is cut on screen only: the heading, the page and the frame keep all of it.
  assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), title)
  assert.equal(await page.locator('#artifact').getAttribute('title'), title)
  await page.screenshot({ path: `${OUTPUT}/share-viewer-phone.png` })

  await page.setViewportSize({ width: 1280, height: 800 })
  const laptop = await layout(page)
  assert.equal(laptop.sideways, 0)
  assert.equal(laptop.downwards, 0)
  assert.equal(Math.round(laptop.frameBottom), 800)
  assert.ok(laptop.titleLines <= 2)
  assert.ok(laptop.viewport - laptop.frameTop >= 0.8 * laptop.viewport, `the frame keeps most (${laptop.frameTop})`)
  await page.screenshot({ path: `${OUTPUT}/share-viewer-laptop.png` })
  await context.close()

  // The owner's viewer on a phone: the switcher keeps its label for screen readers and shares a row.
  op.loginAs('alice')
  const owner = await browser.newContext({ viewport: { width: 390, height: 844 } })
  const ownerPage = await owner.newPage()
  await ownerPage.goto(`${h.base}/a/${p.artifact}`)
  await frameResult(ownerPage)
  assert.equal(await ownerPage.getByLabel('Version').inputValue(), '2')
  const mine = await layout(ownerPage)
  assert.equal(mine.sideways, 0)
  assert.equal(mine.downwards, 0)
  assert.ok(
    mine.viewport - mine.frameTop >= 0.75 * mine.viewport,
    `the frame keeps most of the screen (${mine.frameTop})`,
  )
  await ownerPage.screenshot({ path: `${OUTPUT}/viewer-phone.png` })
  await owner.close()
})
