/**
 * Branding themes (REST branding/routes.ts and the MCP branding tools): named themes with a
 * site name, a message, a palette and optional logo and favicon; at most 50; one active;
 * the active one cannot be deleted. Every change is audited. Signed-in users read the
 * active theme; administrators read, save, activate and delete.
 */
import { createHash } from 'node:crypto'
import { parseDatabaseUrl } from '@gatehouse/kit'
import { assertAdmin } from '../admin/service.ts'
import { recordAudit } from '../audit/store.ts'
import type { Principal } from '../auth/principal.ts'
import type { AppContext } from '../context.ts'
import type { BrandingThemeRow } from '../db/schema.ts'
import { errors } from '../errors.ts'
import { iso } from '../ids.ts'
import { decodeImage, MAX_IMAGE_BYTES } from './images.ts'
import {
  activateTheme,
  countThemes,
  deleteTheme,
  getActiveTheme,
  getTheme,
  listThemes,
  lockThemeSet,
  pruneImages,
  putImage,
  upsertTheme,
} from './store.ts'

export const MAX_THEMES = 50
export const THEME_NAME = '^[a-z0-9][a-z0-9-]{0,62}$'
export const IMAGE_PATH = '/branding/images/'

export interface Palette {
  primary: string
  background: string
  text: string
  accent?: string | undefined
}

export interface ThemeInput {
  name: string
  site_name: string
  message?: string | undefined
  palette: Palette
  /** Omitted: keep the saved image; null: remove it; given: replace it. */
  logo?: { base64: string } | null | undefined
  favicon?: { base64: string } | null | undefined
}

export function themeJson(ctx: AppContext, t: BrandingThemeRow) {
  const url = (sha: string | null) => (sha === null ? null : `${ctx.config.publicOrigin}${IMAGE_PATH}${sha}`)
  return {
    name: t.name,
    active: Number(t.active) === 1,
    site_name: t.site_name,
    message: t.message,
    palette: JSON.parse(t.palette) as Palette,
    logo_url: url(t.logo_sha256),
    // Without a separate favicon the logo is the fallback (spec).
    favicon_url: url(t.favicon_sha256 ?? t.logo_sha256),
    updated_at: iso(Number(t.updated_at)),
  }
}

/** The active theme for any signed-in caller (null until an administrator activates one). */
export async function activeBranding(ctx: AppContext) {
  const t = await getActiveTheme(ctx.database.db)
  return { theme: t ? themeJson(ctx, t) : null }
}

export async function adminBranding(ctx: AppContext, admin: Principal) {
  assertAdmin(admin)
  const themes = await listThemes(ctx.database.db)
  return {
    active: themes.find((t) => Number(t.active) === 1)?.name ?? null,
    themes: themes.map((t) => themeJson(ctx, t)),
    limits: {
      max_themes: MAX_THEMES,
      max_image_bytes: MAX_IMAGE_BYTES,
      image_types: ['image/png', 'image/jpeg', 'image/webp'],
    },
  }
}

/** Save (create or replace) a theme; with `activate`, also make it the active one. */
export async function saveTheme(ctx: AppContext, admin: Principal, input: ThemeInput, activate = false) {
  assertAdmin(admin)
  if (!new RegExp(THEME_NAME).test(input.name)) throw errors.branding_invalid('theme names are 1-63 of a-z, 0-9 and -')
  const images = {
    logo: input.logo ? decodeImage('logo', input.logo.base64) : input.logo,
    favicon: input.favicon ? decodeImage('favicon', input.favicon.base64) : input.favicon,
  }
  const now = ctx.clock.now()
  const saved = await ctx.database.db.transaction().execute(async (tx) => {
    await lockThemeSet(tx, parseDatabaseUrl(ctx.config.database).kind === 'postgres')
    const existing = await getTheme(tx, input.name)
    if (!existing && (await countThemes(tx)) >= MAX_THEMES) throw errors.theme_limit(MAX_THEMES)
    const shaOf = async (which: 'logo' | 'favicon'): Promise<string | null> => {
      const image = images[which]
      if (image === undefined) return existing?.[`${which}_sha256`] ?? null
      if (image === null) return null
      const sha = createHash('sha256').update(image.data).digest('hex')
      await putImage(tx, sha, image.contentType, image.data, now)
      return sha
    }
    const row: BrandingThemeRow = {
      name: input.name,
      site_name: input.site_name,
      message: input.message ?? '',
      palette: JSON.stringify(input.palette),
      logo_sha256: await shaOf('logo'),
      favicon_sha256: await shaOf('favicon'),
      active: existing ? existing.active : 0,
      updated_at: now,
      updated_by: admin.user.id,
    }
    await upsertTheme(tx, row)
    await recordAudit(
      tx,
      admin,
      {
        action: 'branding.save',
        targetType: 'theme',
        targetId: input.name,
        details: { created: !existing, logo: row.logo_sha256, favicon: row.favicon_sha256 },
      },
      now,
    )
    if (activate) {
      await activateTheme(tx, input.name)
      await recordAudit(tx, admin, { action: 'branding.activate', targetType: 'theme', targetId: input.name }, now)
    }
    await pruneImages(tx)
    return (await getTheme(tx, input.name))!
  })
  return themeJson(ctx, saved)
}

export async function activate(ctx: AppContext, admin: Principal, name: string) {
  assertAdmin(admin)
  const now = ctx.clock.now()
  const theme = await ctx.database.db.transaction().execute(async (tx) => {
    if (!(await activateTheme(tx, name))) throw errors.theme_not_found()
    await recordAudit(tx, admin, { action: 'branding.activate', targetType: 'theme', targetId: name }, now)
    return (await getTheme(tx, name))!
  })
  return themeJson(ctx, theme)
}

export async function removeTheme(ctx: AppContext, admin: Principal, name: string) {
  assertAdmin(admin)
  const now = ctx.clock.now()
  await ctx.database.db.transaction().execute(async (tx) => {
    const theme = await getTheme(tx, name)
    if (!theme) throw errors.theme_not_found()
    if (Number(theme.active) === 1) throw errors.theme_active()
    await deleteTheme(tx, name)
    await pruneImages(tx)
    await recordAudit(tx, admin, { action: 'branding.delete', targetType: 'theme', targetId: name }, now)
  })
  return { theme: name, deleted: true as const }
}
