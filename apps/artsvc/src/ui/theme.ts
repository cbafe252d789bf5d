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
 * CSS. The header keeps the theme's primary colour in both schemes. A light theme's background,
 * text and accent apply in the light scheme only: a browser that prefers dark gets app.css's
 * dark surfaces under the theme's header (a light theme's accent was picked for a light page and
 * rarely reads on a dark one). A dark theme is dark in both schemes, with the dark surfaces and
 * status colours app.css defines for it.
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
  return `:root{${always}}\n@media not (prefers-color-scheme: dark){:root{${surfaces}}}\n`
}

/**
 * Black or white text on a background colour, whichever contrasts more (WCAG 2 relative
 * luminance): a light primary colour gets dark header text.
 */
export function onColor(hex: string): '#000000' | '#ffffff' {
  const channel = (i: number) => {
    const c = Number.parseInt(hex.slice(i, i + 2), 16) / 255
    return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4
  }
  const l = 0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5)
  // Contrast with white is 1.05/(l+0.05), with black (l+0.05)/0.05; equal at l ≈ 0.179.
  return l > 0.179 ? '#000000' : '#ffffff'
}
