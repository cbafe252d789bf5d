/**
 * WCAG AA text contrast, measured in a real page: the browser tests of every web UI assert that a
 * screen, in light and dark, at laptop and phone sizes, has no text too faint to read.
 */
import type { Page } from 'playwright-core'

/**
 * Text on the page whose contrast with what is behind it is under WCAG's 4.5:1 (3:1 for large
 * text), one line each (`tag#id.class "text": ratio (colour on background)`): visible elements
 * with text of their own, filled inputs, selects, and `::before` labels (phone cards' column
 * names). The background is the nearest one painted, translucent ones blended over the next, down
 * to the page's canvas (Chromium's dark canvas when the page takes the dark scheme). Disabled
 * controls are exempt (WCAG 1.4.3), as are text for screen readers (`.sr`), a skip link until it
 * has the focus, closed dialogs and options of a closed list.
 *
 * @example assert.deepEqual(await unreadableText(page), [], 'dark, 390 px')
 */
export function unreadableText(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    type Rgba = [number, number, number, number]
    // A computed colour is rgb()/rgba() with 0–255 channels, except where Chromium keeps another
    // space: color-mix() computes to `color(srgb r g b)` with 0–1 channels, oklch() stays oklch.
    // Those go through a 1-pixel canvas, which converts any CSS colour to sRGB bytes.
    const pixel = document.createElement('canvas').getContext('2d', { willReadFrequently: true })
    const parse = (c: string): Rgba => {
      if (/^rgba?\(/.test(c) || pixel === null) {
        const n = (c.match(/[\d.]+/g) ?? []).map(Number)
        return [n[0] ?? 0, n[1] ?? 0, n[2] ?? 0, n[3] ?? 1]
      }
      pixel.clearRect(0, 0, 1, 1)
      pixel.fillStyle = c
      pixel.fillRect(0, 0, 1, 1)
      const [r, g, b, a] = pixel.getImageData(0, 0, 1, 1).data
      return [r ?? 0, g ?? 0, b ?? 0, (a ?? 255) / 255]
    }
    const over = (top: Rgba, under: Rgba): Rgba => {
      const a = top[3]
      return [0, 1, 2].map((i) => top[i]! * a + under[i]! * (1 - a)).concat(1) as Rgba
    }
    const root = getComputedStyle(document.documentElement)
    const dark = root.colorScheme.includes('dark') && matchMedia('(prefers-color-scheme: dark)').matches
    const painted = parse(root.backgroundColor)
    const canvas: Rgba = painted[3] === 0 ? (dark ? [18, 18, 18, 1] : [255, 255, 255, 1]) : painted
    const backdrop = (el: Element | null): Rgba => {
      if (!el) return canvas
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
      if (!el.checkVisibility({ visibilityProperty: true })) continue
      if (el.closest('.sr, .skip:not(:focus), option, dialog:not([open])')) continue
      if ((el as HTMLButtonElement).disabled || el.closest('button:disabled')) continue
      const rect = el.getBoundingClientRect()
      // Parked off-screen (a skip link of another name until it has the focus).
      if (rect.right <= 0 || rect.bottom <= 0) continue
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
