/**
 * Shared set-up of the dashboard's Chromium tests: an edgegate on a fresh SQLite database with
 * the given nodes and flags, a browser, and signed-in pages that collect console errors,
 * page errors and dialogs and save screenshots (after checking there is no inline script)
 * under apps/edgegate/test-output/.
 */
import assert from 'node:assert/strict'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { type Browser, launchChromium } from '@gatehouse/testkit'
import { APP, type Edgegate, makeTls, newDatabase, seed, startEdgegate, type Tls } from './helpers.ts'

export const OUT = join(APP, 'test-output')
export const LAPTOP = { width: 1280, height: 800 }
export const PHONE = { width: 390, height: 844 }

export interface Dashboard {
  /** The server's database URL (a test may set state the API has no way to). */
  database: string
  tls: Tls
  gate: Edgegate
  browser: Browser
  tokens: Record<string, string>
  admin: string
  close(): Promise<void>
}

export async function startDashboard(
  nodes: Array<{ id: string; kind: string }>,
  flags: string[] = [],
): Promise<Dashboard> {
  mkdirSync(OUT, { recursive: true })
  const tls = makeTls()
  const database = await newDatabase('sqlite', async () => {
    throw new Error('unused')
  })
  const { tokens, admin } = await seed(database, nodes)
  const gate = await startEdgegate(database, tls, flags)
  const browser = await launchChromium()
  return {
    database,
    tls,
    gate,
    browser,
    tokens,
    admin,
    async close() {
      await browser.close()
      await gate.stop()
      tls.ca.remove()
    },
  }
}

/** A new browser context and page on `path`; `signIn` signs in with the administrator token. */
export async function openPage(
  dash: Dashboard,
  path = '/',
  options: { signIn?: boolean; colorScheme?: 'light' | 'dark' } = {},
) {
  const context = await dash.browser.newContext({
    ignoreHTTPSErrors: true,
    viewport: LAPTOP,
    colorScheme: options.colorScheme ?? 'light',
  })
  const problems: string[] = []
  const page = await context.newPage()
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(m.text())
  })
  page.on('pageerror', (e) => problems.push(e.message))
  page.on('dialog', (d) => {
    problems.push(`dialog: ${d.message()}`)
    void d.dismiss()
  })
  const response = await page.goto(`${dash.gate.base}${path}`)
  if (options.signIn ?? true) {
    await page.locator('input[name=token]').fill(dash.admin)
    await page.locator('input[name=token]').press('Enter')
    await page.locator('nav[aria-label=Views]').waitFor()
    // The dashboard's script is deferred: act only once it has attached its handlers.
    await page.waitForLoadState('load')
  }
  const shot = async (name: string) => {
    assert.equal(await page.locator('script:not([src])').count(), 0, `${name}: no inline script`)
    await page.screenshot({ path: join(OUT, `${name}.png`), fullPage: true })
  }
  return { context, page, problems, response, shot }
}

export { unreadableText } from '@gatehouse/testkit'
