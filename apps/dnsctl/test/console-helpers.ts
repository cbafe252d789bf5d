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

export { launchChromium }

/**
 * Text on the page whose colour contrast against what is behind it is below WCAG AA (4.5:1,
 * 3:1 for large text), as `tag.class "text" ratio`. Disabled controls are exempt (WCAG 1.4.3);
 * the background is the nearest ancestor's opaque one, translucent layers blended in.
 */
export function lowContrast(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const rgba = (c: string) => {
      const m = /rgba?\(([^)]+)\)/.exec(c)
      if (!m) return [0, 0, 0, 0]
      const parts = m[1]!
        .split(/[\s,/]+/)
        .filter(Boolean)
        .map(Number)
      return [parts[0]!, parts[1]!, parts[2]!, parts[3] ?? 1]
    }
    const over = (top: number[], under: number[]) => {
      const a = top[3]!
      return [0, 1, 2].map((i) => top[i]! * a + under[i]! * (1 - a)).concat(1)
    }
    const luminance = (c: number[]) => {
      const [r, g, b] = c.slice(0, 3).map((v) => {
        const s = v / 255
        return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4
      })
      return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!
    }
    const background = (el: Element): number[] => {
      const layers: number[][] = []
      for (let e: Element | null = el; e; e = e.parentElement) {
        const c = rgba(getComputedStyle(e).backgroundColor)
        if (c[3]! > 0) layers.push(c)
        if (c[3] === 1) break
      }
      const dark = matchMedia('(prefers-color-scheme: dark)').matches
      let out = dark ? [18, 18, 18, 1] : [255, 255, 255, 1]
      for (const layer of layers.reverse()) out = over(layer, out)
      return out
    }
    const bad: string[] = []
    for (const el of document.querySelectorAll('body *')) {
      const own = [...el.childNodes].some((n) => n.nodeType === Node.TEXT_NODE && n.textContent!.trim())
      if (!own || el.closest('.sr, [hidden], option, dialog:not([open])')) continue
      if ((el as HTMLButtonElement).disabled || el.closest('button:disabled')) continue
      const rect = el.getBoundingClientRect()
      // Not drawn, or parked off-screen (the skip link until it has the focus).
      if (rect.width === 0 || rect.height === 0 || rect.right <= 0 || rect.bottom <= 0) continue
      const style = getComputedStyle(el)
      if (style.visibility === 'hidden') continue
      const bg = background(el)
      const fg = over(rgba(style.color), bg)
      const [l1, l2] = [luminance(fg), luminance(bg)].sort((a, b) => b - a)
      const ratio = (l1! + 0.05) / (l2! + 0.05)
      const size = Number.parseFloat(style.fontSize)
      const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700)
      if (ratio < (large ? 3 : 4.5)) {
        bad.push(
          `${el.tagName.toLowerCase()}.${el.className} "${el.textContent!.trim().slice(0, 30)}" ${ratio.toFixed(2)}`,
        )
      }
    }
    return bad
  })
}
