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

/** CSS custom properties for a palette; colours are re-checked so nothing but `#rrggbb` reaches CSS. */
export function themeCss(palette: Palette | null): string {
  if (!palette) return '/* no active theme: the built-in palette of app.css applies */\n'
  const safe = (c: string | undefined) => (c !== undefined && COLOR.test(c) ? c : undefined)
  const vars = [
    ['--brand-primary', safe(palette.primary)],
    ['--brand-bg', safe(palette.background)],
    ['--brand-text', safe(palette.text)],
    ['--brand-accent', safe(palette.accent) ?? safe(palette.primary)],
  ].filter((v): v is [string, string] => v[1] !== undefined)
  return `:root{${vars.map(([k, v]) => `${k}:${v}`).join(';')}}\n`
}
