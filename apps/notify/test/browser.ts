/**
 * Browser tests' shared set-up: one Debian Chromium per test file (closed after it) and a
 * signed-in page per reader, collecting page errors and console errors as `problems`.
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

/** A new browser context signed in as `username` (confirm dialogs are accepted). */
export async function signIn(n: Notify, username: string, password: string, options: SessionOptions = {}) {
  browser ??= launchChromium()
  const context = await (await browser).newContext(
    options.phone
      ? { viewport: { width: 390, height: 800 }, isMobile: true }
      : { viewport: { width: 1280, height: 800 } },
  )
  if (options.permissions) await context.grantPermissions(options.permissions, { origin: n.base })
  const page = await context.newPage()
  const problems: string[] = []
  page.on('console', (m) => {
    // The sign-in page's own GET /api/v1/auth/me answers 401 before sign-in: expected.
    if (m.type() === 'error' && !m.text().includes('status of 401')) problems.push(m.text())
  })
  page.on('pageerror', (e) => problems.push(String(e)))
  page.on('dialog', (d) => void d.accept())
  await page.goto(n.base)
  await page.getByLabel('Username').fill(username)
  await page.getByLabel('Password').fill(password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByText(`Signed in as ${username}`).waitFor()
  const session: Session = { page, context, problems, close: () => context.close() }
  return session
}

/** The shared browser (for tests that need a page without signing in). */
export function sharedBrowser(): Promise<Browser> {
  browser ??= launchChromium()
  return browser
}
