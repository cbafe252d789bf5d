/** Console test harness: dnsctl + knotd (helpers.ts) with the console listening, signed-in clients and Chromium. */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { type Browser, launchChromium, type Page } from '@gatehouse/testkit'
import { type Harness, json, startHarness } from './helpers.ts'

export const SHOTS = join(import.meta.dirname, '..', 'test-output')

export interface ConsoleHarness extends Harness {
  /** `http://127.0.0.1:PORT` of the console listener. */
  consoleBase: string
  /** Mint a one-time sign-in link through the API listener (what `dnsctl console` does). */
  link(name?: string): Promise<string>
}

export async function startConsoleHarness(options: Parameters<typeof startHarness>[0] = {}): Promise<ConsoleHarness> {
  const h = await startHarness(options)
  const consoleBase = await h.dnsctl.console.listener.listen('127.0.0.1', 0)
  return Object.assign(h, {
    consoleBase,
    async link(name = 'tester') {
      const res = await h.call('POST', '/console/links', { name })
      if (res.status !== 201) throw new Error(`minting a link answered ${res.status}`)
      return (await json(res)).url as string
    },
  })
}

/** A signed-in browser page (fresh context) on the console, at #/zones. */
export async function signedInPage(
  browser: Browser,
  h: ConsoleHarness,
  viewport = { width: 1280, height: 860 },
): Promise<Page> {
  const context = await browser.newContext({ viewport })
  context.setDefaultTimeout(10_000)
  const page = await context.newPage()
  const problems: string[] = []
  page.on('pageerror', (err) => problems.push(err.message))
  page.on('console', (msg) => {
    if (msg.type() === 'error' && !/status of 4\d\d/.test(msg.text())) problems.push(msg.text())
  })
  Object.assign(page, { problems })
  await page.goto(await h.link())
  await page.getByRole('link', { name: 'Zones' }).waitFor()
  return page
}

/** Errors the page logged (script errors, CSP violations); a test asserts there are none. */
export function pageProblems(page: Page): string[] {
  return (page as unknown as { problems: string[] }).problems
}

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SHOTS, { recursive: true })
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true })
}

export { unreadableText as lowContrast } from '@gatehouse/testkit'
export { launchChromium }
