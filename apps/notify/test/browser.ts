/**
 * Browser tests' shared set-up: one Debian Chromium per test file (closed after it), fresh
 * contexts, and a signed-in page per reader that collects page errors and console errors as
 * `problems` (so a test can assert there were none). The client asks its questions in its own
 * dialog (web/confirm.js, answered with `confirmAction`); a browser dialog (confirm(), alert())
 * is a problem.
 */
import { after } from 'node:test'
import { type Browser, type BrowserContext, launchChromium, type Page } from '@gatehouse/testkit'
import type { Notify } from './helpers.ts'

let browser: Promise<Browser> | undefined
after(async () => {
  if (browser) await (await browser).close()
})

export interface Session {
  page: Page
  context: BrowserContext
  problems: string[]
  close(): Promise<void>
}

export interface SessionOptions {
  /** A phone-sized screen (390 x 800, touch). */
  phone?: boolean
  /** Browser permissions granted to the notify origin (e.g. `notifications`). */
  permissions?: string[]
}

/** The shared browser (for tests that need a page without signing in). */
export function sharedBrowser(): Promise<Browser> {
  browser ??= launchChromium()
  return browser
}

/** A fresh browser context (cookies, storage) on a laptop (1280 wide) or phone (390 wide) viewport. */
export async function newContext(phone = false): Promise<BrowserContext> {
  return (await sharedBrowser()).newContext(
    phone ? { viewport: { width: 390, height: 800 }, isMobile: true } : { viewport: { width: 1280, height: 800 } },
  )
}

/**
 * A new browser context signed in as `username`. `options` may be `true` for a phone screen.
 * Console errors about the statuses in `expectedStatuses` are not problems (the sign-in page's
 * own GET /api/v1/auth/me answers 401 before sign-in: always expected).
 */
export async function signIn(
  n: Notify,
  username: string,
  password: string,
  options: SessionOptions | boolean = {},
  expectedStatuses = [401],
): Promise<Session> {
  const o = typeof options === 'boolean' ? { phone: options } : options
  const context = await newContext(o.phone ?? false)
  if (o.permissions) await context.grantPermissions(o.permissions, { origin: n.base })
  const page = await context.newPage()
  const problems: string[] = []
  const expected = new RegExp(`status of (${expectedStatuses.join('|')})`)
  page.on('console', (m) => {
    if (m.type() === 'error' && !expected.test(m.text())) problems.push(m.text())
  })
  page.on('pageerror', (e) => problems.push(String(e)))
  page.on('dialog', (d) => {
    problems.push(`browser dialog: ${d.message()}`)
    void d.dismiss()
  })
  await page.goto(n.base)
  await page.getByLabel('Username').fill(username)
  await page.getByLabel('Password').fill(password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByText(`Signed in as ${username}`).waitFor()
  return { page, context, problems, close: () => context.close() }
}

/**
 * Answer the client's confirmation dialog (web/confirm.js) with its `action` button, and wait
 * for it to close.
 */
export async function confirmAction(page: Page, action: string): Promise<void> {
  const dialog = page.getByRole('alertdialog')
  await dialog.getByRole('button', { name: action, exact: true }).click()
  await dialog.waitFor({ state: 'detached' })
}
