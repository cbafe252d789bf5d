/**
 * A browser at an address the web client does not have, in Debian's Chromium against a real
 * notify: the client's own 404 page (its stylesheet, a way home by keyboard, no script, the
 * address never repeated), light and dark, laptop and phone; API and hook paths keep the coded
 * JSON their callers read. Screenshots go to apps/notify/test-output/.
 */
import assert from 'node:assert/strict'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { CSP } from '../src/web/routes.ts'
import { sharedBrowser, signIn } from './browser.ts'
import { ADMIN, ADMIN_PASSWORD, backends, DEV_TOKEN, startNotify } from './helpers.ts'

const OUT = join(import.meta.dirname, '..', 'test-output')
mkdirSync(OUT, { recursive: true })

const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8'

test('a mistyped address gets the client’s 404 page with a way home; API and hook paths keep JSON', async (t) => {
  const n = await startNotify(backends[0]!)
  t.after(() => n.close())
  const admin = await signIn(n, ADMIN, ADMIN_PASSWORD)
  t.after(() => admin.close())
  const page = admin.page
  const secretish = '/inbox/some-secret-looking-segment'
  const res = await page.goto(`${n.base}${secretish}?q=private-words`)
  assert.equal(res?.status(), 404)
  assert.equal(res?.headers()['content-security-policy'], CSP)
  assert.match(res?.headers()['content-type'] ?? '', /^text\/html/)
  await page.getByRole('heading', { name: 'Page not found' }).waitFor()
  assert.equal(await page.title(), 'Page not found · Notify')
  const html = await page.content()
  for (const word of ['some-secret-looking-segment', 'private-words']) assert.equal(html.includes(word), false, word)
  assert.equal(await page.locator('script').count(), 0)
  // The client's stylesheet is applied (its panel, not the browser's default white page).
  const panel = await page.locator('main.notice').evaluate((el) => getComputedStyle(el).borderRadius)
  assert.equal(panel, '10px')
  await page.screenshot({ path: join(OUT, 'not-found-laptop.png') })

  // The way home by keyboard alone: the first Tab reaches the link, Enter follows it.
  await page.keyboard.press('Tab')
  const focused = page.getByRole('link', { name: 'Go to your notifications' })
  assert.equal(await focused.evaluate((el) => el === document.activeElement), true)
  await page.keyboard.press('Enter')
  await page.getByText(`Signed in as ${ADMIN}`).waitFor()
  assert.equal(new URL(page.url()).pathname, '/')

  // Dark and phone: the same page, readable.
  const browser = await sharedBrowser()
  for (const [name, options] of [
    ['laptop-dark', { viewport: { width: 1280, height: 800 }, colorScheme: 'dark' as const }],
    ['phone', { viewport: { width: 390, height: 844 }, isMobile: true }],
    ['phone-dark', { viewport: { width: 390, height: 844 }, isMobile: true, colorScheme: 'dark' as const }],
  ] as const) {
    const context = await browser.newContext(options)
    t.after(() => context.close())
    const p = await context.newPage()
    assert.equal((await p.goto(`${n.base}/settings`))?.status(), 404)
    await p.getByRole('link', { name: 'Go to your notifications' }).waitFor()
    const overflow = await p.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)
    assert.ok(overflow <= 0, `${name}: the page is ${overflow}px wider than the screen`)
    await p.screenshot({ path: join(OUT, `not-found-${name}.png`) })
  }

  // API and hooks: the coded JSON, also when the client names text/html.
  for (const path of ['/api/v1/no-such-thing', '/api', `/hooks/${DEV_TOKEN}/extra`]) {
    const r = await fetch(`${n.base}${path}`, { headers: { accept: BROWSER_ACCEPT } })
    assert.equal(r.status, 404, path)
    assert.match(r.headers.get('content-type') ?? '', /application\/json/, path)
    assert.equal(((await r.json()) as { error: { code: string } }).error.code, 'not_found', path)
  }
  // A browser opening a hook's address (it takes POST only) is told the method, in JSON.
  const hook = await fetch(`${n.base}/hooks/${DEV_TOKEN}`, { headers: { accept: BROWSER_ACCEPT } })
  assert.equal(hook.status, 405)
  assert.match(hook.headers.get('content-type') ?? '', /application\/json/)
  // Not a navigation (fetch's own Accept): JSON everywhere.
  const plain = await fetch(`${n.base}/settings`)
  assert.equal(plain.status, 404)
  assert.match(plain.headers.get('content-type') ?? '', /application\/json/)
  // The page's own 404 is the only console error a browser logs for it.
  assert.deepEqual(
    admin.problems.filter((p) => !/status of 404/.test(p)),
    [],
  )
})
