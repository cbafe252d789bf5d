/**
 * Headless Chromium for browser tests: Debian's `/usr/bin/chromium` driven by
 * playwright-core, with the flags that work on a machine without outside network.
 */
import { type Browser, chromium } from 'playwright-core'
import { killQuietly, onExit } from './cleanup.ts'
import { requireBinary } from './env.ts'

export type { Browser, BrowserContext, Page } from 'playwright-core'

export const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
]

/** @example const browser = await launchChromium(); after(() => browser.close()); const page = await browser.newPage() */
export async function launchChromium(): Promise<Browser> {
  const executablePath = requireBinary('/usr/bin/chromium', 'chromium')
  const browser = await chromium.launch({ executablePath, args: CHROMIUM_FLAGS, headless: true, timeout: 30_000 })
  const pid = (browser as unknown as { process?: () => { pid?: number } }).process?.()?.pid
  const unregister = onExit(() => killQuietly(pid))
  browser.once('disconnected', unregister)
  return browser
}
