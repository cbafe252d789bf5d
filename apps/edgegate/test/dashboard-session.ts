/**
 * Shared set-up of the dashboard's Chromium tests: an edgegate on a fresh SQLite database with
 * the given nodes and flags, a browser, and signed-in pages that collect console errors,
 * page errors and dialogs and save screenshots (after checking there is no inline script)
 * under apps/edgegate/test-output/.
 */
import assert from 'node:assert/strict'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { type Browser, launchChromium, type Page } from '@gatehouse/testkit'
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

/**
 * Text on the page whose contrast with what is behind it is under WCAG's 4.5:1 (3:1 for large
 * text): visible elements with text of their own, form controls, and the column labels that
 * phone cards draw with ::before. The background is the nearest one painted (translucent ones
 * blended over the next), down to the page's canvas.
 */
export function unreadableText(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    type Rgba = [number, number, number, number]
    const parse = (c: string): Rgba => {
      const n = (c.match(/[\d.]+/g) ?? []).map(Number)
      return [n[0] ?? 0, n[1] ?? 0, n[2] ?? 0, n[3] ?? 1]
    }
    const over = (top: Rgba, under: Rgba): Rgba => {
      const a = top[3]
      return [0, 1, 2].map((i) => top[i]! * a + under[i]! * (1 - a)).concat(1) as Rgba
    }
    const canvas = parse(getComputedStyle(document.documentElement).backgroundColor)
    const backdrop = (el: Element | null): Rgba => {
      if (!el) return canvas[3] === 0 ? [255, 255, 255, 1] : canvas
      const bg = parse(getComputedStyle(el).backgroundColor)
      if (bg[3] === 0) return backdrop(el.parentElement)
      return bg[3] === 1 ? bg : over(bg, backdrop(el.parentElement))
    }
    const luminance = (c: Rgba) => {
      const [r, g, b] = [c[0], c[1], c[2]].map((v) => {
        const s = v / 255
        return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4
      })
      return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!
    }
    const ratio = (a: Rgba, b: Rgba) => {
      const [x, y] = [luminance(a), luminance(b)].sort((p, q) => q - p)
      return (x! + 0.05) / (y! + 0.05)
    }
    const problems: string[] = []
    const check = (el: Element, style: CSSStyleDeclaration, text: string, what: string) => {
      const size = Number.parseFloat(style.fontSize)
      const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700)
      const fg = parse(style.color)
      const bg = backdrop(el)
      const r = ratio(fg[3] === 1 ? fg : over(fg, bg), bg)
      if (r < (large ? 3 : 4.5))
        problems.push(
          `${what} "${text.slice(0, 40)}": ${r.toFixed(2)}:1 (${style.color} on rgb(${bg.slice(0, 3).join(', ')}))`,
        )
    }
    for (const el of document.body.querySelectorAll('*')) {
      if (!el.checkVisibility({ visibilityProperty: true }) || el.closest('.sr, .skip:not(:focus)')) continue
      const style = getComputedStyle(el)
      const own = [...el.childNodes]
        .filter((n) => n.nodeType === Node.TEXT_NODE)
        .map((n) => n.textContent ?? '')
        .join('')
        .trim()
      const name = `${el.localName}${el.id ? `#${el.id}` : ''}${el.className && typeof el.className === 'string' ? `.${el.className.split(' ').join('.')}` : ''}`
      if (own !== '') check(el, style, own, name)
      else if (el instanceof HTMLInputElement && el.value !== '') check(el, style, el.value, name)
      else if (el instanceof HTMLSelectElement) check(el, style, el.selectedOptions[0]?.text ?? '', name)
      const before = getComputedStyle(el, '::before')
      if (before.content !== 'none' && before.content !== 'normal' && before.content !== '""')
        check(el, before, before.content, `${name}::before`)
    }
    return problems
  })
}
