/**
 * Browser tests' shared part: one Chromium per test file (closed after it), a reader
 * signed in through the sign-in form in a fresh context, and the page's console errors and
 * uncaught exceptions collected so a test can assert there were none.
 */
import { after } from 'node:test'
import { type Browser, type BrowserContext, launchChromium } from '@gatehouse/testkit'
import type { Notify } from './helpers.ts'

let browser: Promise<Browser> | undefined
after(async () => {
  if (browser) await (await browser).close()
})

/** A fresh browser context (cookies, storage) on a laptop (1280 wide) or phone (390 wide) viewport. */
export async function newContext(phone = false): Promise<BrowserContext> {
  browser ??= launchChromium()
  return (await browser).newContext(
    phone ? { viewport: { width: 390, height: 800 }, isMobile: true } : { viewport: { width: 1280, height: 800 } },
  )
}

/**
 * Sign in as `username` on a laptop (1280 wide) or phone (390 wide) viewport. Console
 * errors about the statuses in `expectedStatuses` are not problems (the sign-in page's own
 * 401 before sign-in always is one).
 */
export async function signIn(n: Notify, username: string, password: string, phone = false, expectedStatuses = [401]) {
  const context = await newContext(phone)
  const page = await context.newPage()
  const problems: string[] = []
  const expected = new RegExp(`status of (${expectedStatuses.join('|')})`)
  page.on('console', (m) => {
    if (m.type() === 'error' && !expected.test(m.text())) problems.push(m.text())
  })
  page.on('pageerror', (e) => problems.push(String(e)))
  await page.goto(n.base)
  await page.getByLabel('Username').fill(username)
  await page.getByLabel('Password').fill(password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByText(`Signed in as ${username}`).waitFor()
  return { page, problems, close: () => context.close() }
}
