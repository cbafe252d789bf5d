/** The branding tools: every signed-in user reads the active theme; administrators manage themes. */
import * as z from 'zod'
import { activate, activeBranding, adminBranding, removeTheme, saveTheme } from '../branding/service.ts'
import type { AppContext } from '../context.ts'
import type { DefineTool } from './tools.ts'

const color = z
  .string()
  .regex(/^#[0-9a-fA-F]{6}$/)
  .describe('Colour as #rrggbb')
const themeName = z
  .string()
  .regex(/^[a-z0-9][a-z0-9-]{0,62}$/)
  .describe('Theme name: 1-63 characters of a-z, 0-9 and -')
const image = z
  .strictObject({ base64: z.string().max(700_000).describe('PNG, JPEG or WebP bytes, base64; at most 512 KiB') })
  .nullable()
  .optional()
  .describe('Omit to keep the saved image, null to remove it')
const palette = z.object({ primary: color, background: color, text: color, accent: color.optional() })
const theme = z.object({
  name: z.string(),
  active: z.boolean(),
  site_name: z.string(),
  message: z.string(),
  palette,
  logo_url: z.string().nullable(),
  favicon_url: z.string().nullable().describe('The favicon, or the logo when the theme has no separate favicon'),
  updated_at: z.string(),
})
const adminOut = z.object({
  active: z.string().nullable(),
  themes: z.array(theme),
  limits: z.object({
    max_themes: z.number().int(),
    max_image_bytes: z.number().int(),
    image_types: z.array(z.string()),
  }),
})

const none = z.strictObject({})
const activeOut = z.object({ theme: theme.nullable() })
const updateIn = z.strictObject({
  name: themeName,
  site_name: z.string().min(1).max(100).describe('Name shown in the header'),
  message: z.string().max(500).optional().describe('Short plain-text message shown to users'),
  palette,
  logo: image,
  favicon: image,
  activate: z.boolean().optional().describe('Also make this theme the active one'),
})
const nameIn = z.strictObject({ name: themeName })
const deletedOut = z.object({ theme: z.string(), deleted: z.literal(true) })

/** `admin` defines administrators' tools; without it (other audiences) they are not registered. */
export function brandingTools(ctx: AppContext, tool: DefineTool, admin?: DefineTool) {
  tool(
    'artsvc_get_branding',
    {
      title: 'Read the instance branding',
      description:
        'The active branding theme (site name, message, colour palette, logo and favicon URLs), so pages you publish can match ' +
        'the instance. theme is null when no theme is active.',
      input: none,
      output: activeOut,
      readOnly: true,
    },
    () => activeBranding(ctx),
  )
  if (!admin) return
  admin(
    'artsvc_admin_get_branding',
    {
      title: 'List branding themes (administrator)',
      description: 'Every saved theme, which one is active, and the limits (50 themes, 512 KiB PNG/JPEG/WebP images).',
      input: none,
      output: adminOut,
      readOnly: true,
    },
    (_a, p) => adminBranding(ctx, p),
  )
  admin(
    'artsvc_admin_update_branding',
    {
      title: 'Save a branding theme (administrator)',
      description:
        'Create or replace a named theme. Images are checked by their bytes (PNG, JPEG or WebP, at most 512 KiB); at most ' +
        '50 themes. With activate: true the theme also becomes the active one. Audited.',
      input: updateIn,
      output: theme,
    },
    ({ activate: act, ...input }, p) => saveTheme(ctx, p, input, act ?? false),
  )
  admin(
    'artsvc_admin_activate_branding_theme',
    {
      title: 'Activate a branding theme (administrator)',
      description: 'Make a saved theme the active one for every user. Audited.',
      input: nameIn,
      output: theme,
    },
    ({ name }, p) => activate(ctx, p, name),
  )
  admin(
    'artsvc_admin_delete_branding_theme',
    {
      title: 'Delete a branding theme (administrator)',
      description:
        'Delete an inactive saved theme. The active theme is refused (theme_active): activate another first. Audited.',
      input: nameIn,
      output: deletedOut,
      destructive: true,
    },
    ({ name }, p) => removeTheme(ctx, p, name),
  )
}
