/**
 * The active branding theme as the management pages use it: a stylesheet of CSS custom
 * properties (`/branding/theme.css`, so no page needs an inline style), the favicon, the
 * site name, logo and message. Content-origin responses never use any of this: the theme
 * stays outside the sandbox.
 */
import { activeBranding, type Palette } from '../branding/service.ts'
import type { AppContext } from '../context.ts'

export interface PageTheme {
  siteName: string
  message: string
  logoUrl: string | null
  faviconUrl: string | null
  palette: Palette | null
  /** Changes whenever the theme does: busts the stylesheet cache. */
  version: string
}

export const DEFAULT_SITE_NAME = 'artsvc'
const COLOR = /^#[0-9a-fA-F]{6}$/

export async function pageTheme(ctx: AppContext): Promise<PageTheme> {
  const { theme } = await activeBranding(ctx)
  if (!theme)
    return { siteName: DEFAULT_SITE_NAME, message: '', logoUrl: null, faviconUrl: null, palette: null, version: '0' }
  return {
    siteName: theme.site_name,
    message: theme.message,
    logoUrl: theme.logo_url,
    faviconUrl: theme.favicon_url,
    palette: theme.palette,
    version: `${theme.name}-${Date.parse(theme.updated_at)}`,
  }
}

/**
 * CSS custom properties for a palette; colours are re-checked so nothing but `#rrggbb` reaches
 * CSS. The header keeps the theme's primary colour in both schemes. A light theme's background
 * and text apply in the light scheme only: a browser that prefers dark gets app.css's dark
 * surfaces under the theme's header, and the theme's own accent lightened until it reads there
 * (darkAccent), so links and focus rings keep the theme's hue. A dark theme is dark in both
 * schemes, with the dark surfaces and status colours app.css defines for it.
 */
export function themeCss(palette: Palette | null): string {
  if (!palette) return '/* no active theme: the built-in palette of app.css applies */\n'
  const safe = (c: string | undefined) => (c !== undefined && COLOR.test(c) ? c : undefined)
  const declare = (vars: [string, string | undefined][]) =>
    vars
      .filter((v): v is [string, string] => v[1] !== undefined)
      .map(([k, v]) => `${k}:${v}`)
      .join(';')
  const always = declare([
    ['--brand-primary', safe(palette.primary)],
    ['--brand-on-primary', safe(palette.primary) && onColor(palette.primary)],
  ])
  const surfaces = declare([
    ['--brand-bg', safe(palette.background)],
    ['--brand-text', safe(palette.text)],
    ['--brand-accent', safe(palette.accent) ?? safe(palette.primary)],
  ])
  const background = safe(palette.background)
  if (background !== undefined && onColor(background) === '#ffffff') {
    const dark = declare([
      ['color-scheme', 'dark'],
      ['--panel', 'color-mix(in srgb,var(--brand-text) 6%,var(--brand-bg))'],
      ['--danger', 'var(--danger-on-dark)'],
      ['--ok', 'var(--ok-on-dark)'],
    ])
    return `:root{${[always, surfaces, dark].filter(Boolean).join(';')}}\n`
  }
  const accent = safe(palette.accent) ?? safe(palette.primary)
  const darkScheme =
    accent === undefined ? '' : `\n@media (prefers-color-scheme: dark){:root{--brand-accent:${darkAccent(accent)}}}`
  return `:root{${always}}\n@media not (prefers-color-scheme: dark){:root{${surfaces}}}${darkScheme}\n`
}

/**
 * app.css's dark scheme: the page background and, lighter, the panels on it
 * (color-mix(in srgb, text 6%, background)). Text on the panels is the harder case.
 */
export const DARK_SURFACES = { background: '#14171d', panel: '#21242a' } as const
/**
 * WCAG AA for body text is 4.5:1; the margin covers the faint accent tints some controls sit on
 * (a drop zone is the panel with 8% of the accent mixed in).
 */
const DARK_ACCENT_CONTRAST = 5

/**
 * A light theme's accent for the dark scheme: the same hue and saturation (HSL), lightness raised
 * in small steps until it has DARK_ACCENT_CONTRAST against the dark panels. An accent that already
 * reads there is kept as it is. web/palette.js mirrors this for the theme editor's dark preview.
 */
export function darkAccent(hex: string): string {
  const panel = luminance(DARK_SURFACES.panel)
  const readable = (c: string) => (luminance(c) + 0.05) / (panel + 0.05) >= DARK_ACCENT_CONTRAST
  if (readable(hex)) return hex
  const [h, s, l] = toHsl(hex)
  // Lightness 1 is white, which always reads: the loop ends there at the latest.
  for (let step = Math.ceil(l * 200) + 1; step <= 200; step++) {
    const candidate = fromHsl(h, s, step / 200)
    if (readable(candidate)) return candidate
  }
  return '#ffffff'
}

/** WCAG 2 relative luminance of `#rrggbb`. */
function luminance(hex: string): number {
  const channel = (i: number) => {
    const c = Number.parseInt(hex.slice(i, i + 2), 16) / 255
    return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4
  }
  return 0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5)
}

/** `#rrggbb` to hue (degrees), saturation and lightness (0-1). */
export function toHsl(hex: string): [number, number, number] {
  const [r, g, b] = [1, 3, 5].map((i) => Number.parseInt(hex.slice(i, i + 2), 16) / 255) as [number, number, number]
  const max = Math.max(r, g, b)
  const min = Math.min(r, g, b)
  const l = (max + min) / 2
  const d = max - min
  if (d === 0) return [0, 0, l]
  const s = d / (1 - Math.abs(2 * l - 1))
  const h = max === r ? ((g - b) / d + 6) % 6 : max === g ? (b - r) / d + 2 : (r - g) / d + 4
  return [h * 60, s, l]
}

function fromHsl(h: number, s: number, l: number): string {
  const c = (1 - Math.abs(2 * l - 1)) * s
  const x = c * (1 - Math.abs(((h / 60) % 2) - 1))
  const m = l - c / 2
  const sector = Math.floor(h / 60) % 6
  const [r, g, b] = [
    [c, x, 0],
    [x, c, 0],
    [0, c, x],
    [0, x, c],
    [x, 0, c],
    [c, 0, x],
  ][sector]!
  const byte = (v: number) =>
    Math.round((v + m) * 255)
      .toString(16)
      .padStart(2, '0')
  return `#${byte(r!)}${byte(g!)}${byte(b!)}`
}

/**
 * Black or white text on a background colour, whichever contrasts more (WCAG 2 relative
 * luminance): a light primary colour gets dark header text.
 */
export function onColor(hex: string): '#000000' | '#ffffff' {
  const l = luminance(hex)
  // Contrast with white is 1.05/(l+0.05), with black (l+0.05)/0.05; equal at l ≈ 0.179.
  return l > 0.179 ? '#000000' : '#ffffff'
}
