/**
 * The theme stylesheet's colours (src/ui/theme.ts) and their browser mirror (web/palette.js, the
 * theme editor's previews): a light theme's accent in the dark scheme keeps its hue and reads on
 * the dark panels; an accent that already reads is kept; the editor computes exactly what the
 * server serves, for any colour.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { DARK_SURFACES, darkAccent, onColor, themeCss, toHsl } from '../src/ui/theme.ts'
// @ts-expect-error: a browser module in plain JavaScript, without type declarations
import * as browser from '../web/palette.js'

const hex = fc
  .tuple(fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 255 }))
  .map((rgb) => `#${rgb.map((v) => v.toString(16).padStart(2, '0')).join('')}`)

/** WCAG 2 contrast ratio of two `#rrggbb` colours. */
function contrast(a: string, b: string): number {
  const lum = (c: string) => {
    const [r, g, bl] = [1, 3, 5].map((i) => {
      const s = Number.parseInt(c.slice(i, i + 2), 16) / 255
      return s <= 0.04045 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4
    }) as [number, number, number]
    return 0.2126 * r + 0.7152 * g + 0.0722 * bl
  }
  const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p) as [number, number]
  return (x + 0.05) / (y + 0.05)
}

/** Hue distance in degrees, around the circle. */
const hueGap = (a: number, b: number) => Math.min(Math.abs(a - b), 360 - Math.abs(a - b))

/** The declarations theme.css gives the dark scheme, or null without a dark block. */
function darkBlock(css: string): string | null {
  return /@media \(prefers-color-scheme: dark\)\{:root\{([^}]*)\}\}/.exec(css)?.[1] ?? null
}

test('a light theme with a strong brand accent keeps its hue in the dark scheme, readable', () => {
  const brands = ['#0b6e4f', '#c8102e', '#005577', '#6a1b9a', '#1f4fd1', '#b35900']
  for (const accent of brands) {
    const css = themeCss({ primary: '#333333', background: '#fbfaf5', text: '#202020', accent })
    const block = darkBlock(css)
    assert.ok(block, `${accent}: a dark-scheme block in ${css}`)
    const dark = /--brand-accent:(#[0-9a-f]{6})/.exec(block)?.[1]
    assert.ok(dark, `${accent}: ${block}`)
    assert.notEqual(dark, accent, `${accent} is too dark for the dark scheme as it is`)
    assert.ok(hueGap(toHsl(dark)[0], toHsl(accent)[0]) <= 2, `${accent} -> ${dark} keeps its hue`)
    assert.ok(contrast(dark, DARK_SURFACES.panel) >= 4.5, `${accent} -> ${dark} on the dark panels`)
    assert.ok(contrast(dark, DARK_SURFACES.background) >= 4.5, `${accent} -> ${dark} on the dark page`)
    // The light scheme keeps the accent as the theme set it.
    assert.match(css, new RegExp(`@media not \\(prefers-color-scheme: dark\\)\\{:root\\{[^}]*--brand-accent:${accent}`))
  }
})

test('without an accent the primary colour is the one adjusted; a dark theme gets no dark block', () => {
  const css = themeCss({ primary: '#0b6e4f', background: '#ffffff', text: '#000000' })
  assert.equal(/--brand-accent:(#[0-9a-f]{6})/.exec(darkBlock(css) ?? '')?.[1], darkAccent('#0b6e4f'))
  const night = themeCss({ primary: '#f2b705', background: '#101418', text: '#e8e6e3', accent: '#0b6e4f' })
  assert.equal(darkBlock(night), null, night)
  assert.match(night, /--brand-accent:#0b6e4f/)
})

test('a malformed accent never reaches the stylesheet', () => {
  const css = themeCss({ primary: 'red;}body{x:y', background: '#ffffff', text: '#000000', accent: '#12345' })
  assert.equal(darkBlock(css), null, css)
  assert.doesNotMatch(css, /red|#12345|body\{/)
})

test('any accent: the dark one reads, keeps a readable accent unchanged, and keeps a saturated hue', () => {
  fc.assert(
    fc.property(hex, (accent) => {
      const dark = darkAccent(accent)
      assert.match(dark, /^#[0-9a-f]{6}$/)
      assert.ok(contrast(dark, DARK_SURFACES.panel) >= 4.5, `${accent} -> ${dark}`)
      if (contrast(accent, DARK_SURFACES.panel) >= 5) assert.equal(dark, accent)
      // A clearly coloured accent stays the same colour; near-greys have no hue worth keeping
      // and 8-bit rounding moves it.
      const [h, s] = toHsl(accent)
      const [hd, sd, ld] = toHsl(dark)
      if (s >= 0.3 && sd * (1 - Math.abs(2 * ld - 1)) >= 0.15)
        assert.ok(hueGap(h, hd) <= 4, `${accent} (hue ${h}) -> ${dark} (hue ${hd})`)
    }),
    { numRuns: 2000 },
  )
})

test('the theme editor previews what the server serves, for any colour', () => {
  fc.assert(
    fc.property(hex, (c) => {
      assert.equal(browser.darkAccent(c), darkAccent(c), c)
      assert.equal(browser.onColor(c), onColor(c), c)
    }),
    { numRuns: 2000 },
  )
  assert.equal(browser.DARK_SURFACES.panel, DARK_SURFACES.panel)
  assert.equal(browser.DARK_SURFACES.background, DARK_SURFACES.background)
})
