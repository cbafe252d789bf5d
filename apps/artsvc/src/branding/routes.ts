/**
 * GET    /api/v1/branding                        signed in: the active theme
 * GET    /api/v1/admin/branding                  admin: every saved theme, the active one, the limits
 * PUT    /api/v1/admin/branding                  admin: {theme?, activate?}: save a theme and/or activate one
 * DELETE /api/v1/admin/branding/themes/{theme}   admin: delete an inactive theme
 * GET    /branding/images/{sha256}               anyone: a theme image with its sniffed content type
 */
import type { HttpApp } from '@gatehouse/kit'
import { Type } from 'typebox'
import type { AppContext } from '../context.ts'
import { errors } from '../errors.ts'
import { activate, activeBranding, adminBranding, removeTheme, saveTheme, THEME_NAME } from './service.ts'
import { getImage } from './store.ts'

const Color = Type.String({ pattern: '^#[0-9a-fA-F]{6}$' })
const Image = Type.Union([
  Type.Null(),
  Type.Object({ base64: Type.String({ maxLength: 700_000 }) }, { additionalProperties: false }),
])
export const ThemeBody = Type.Object(
  {
    name: Type.String({ pattern: THEME_NAME }),
    site_name: Type.String({ minLength: 1, maxLength: 100 }),
    message: Type.Optional(Type.String({ maxLength: 500 })),
    palette: Type.Object(
      { primary: Color, background: Color, text: Color, accent: Type.Optional(Color) },
      { additionalProperties: false },
    ),
    logo: Type.Optional(Image),
    favicon: Type.Optional(Image),
  },
  { additionalProperties: false },
)
const PutBody = Type.Object(
  { theme: Type.Optional(ThemeBody), activate: Type.Optional(Type.String({ pattern: THEME_NAME })) },
  { additionalProperties: false },
)
const ThemeParams = Type.Object({ theme: Type.String({ pattern: THEME_NAME }) })
const ImageParams = Type.Object({ sha256: Type.String({ pattern: '^[0-9a-f]{64}$' }) })

export function brandingRoutes(app: HttpApp, ctx: AppContext) {
  app.get(
    '/api/v1/branding',
    { schema: { summary: 'Get the active branding theme', tags: ['branding'] } },
    async (req) => {
      await ctx.auth.require(req)
      return activeBranding(ctx)
    },
  )

  app.get(
    '/api/v1/admin/branding',
    { schema: { summary: 'List saved branding themes, the active one and the limits (admin)', tags: ['admin'] } },
    async (req) => adminBranding(ctx, await ctx.auth.requireAdmin(req)),
  )

  // Two images of 512 KiB in base64 plus the rest.
  app.put(
    '/api/v1/admin/branding',
    {
      schema: { summary: 'Save a branding theme and/or activate one (admin)', body: PutBody, tags: ['admin'] },
      bodyLimit: 2 * 1024 * 1024,
    },
    async (req) => {
      const admin = await ctx.auth.requireAdmin(req)
      const { theme, activate: name } = req.body
      if (!theme && !name) throw errors.branding_invalid('give theme, activate or both')
      if (theme && name !== undefined && name !== theme.name)
        throw errors.branding_invalid('activate must name the theme being saved, or be sent alone')
      if (theme) await saveTheme(ctx, admin, theme, name !== undefined)
      else await activate(ctx, admin, name!)
      return adminBranding(ctx, admin)
    },
  )

  app.delete(
    '/api/v1/admin/branding/themes/:theme',
    { schema: { summary: 'Delete an inactive branding theme (admin)', params: ThemeParams, tags: ['admin'] } },
    async (req, reply) => {
      await removeTheme(ctx, await ctx.auth.requireAdmin(req), req.params.theme)
      return reply.code(204).send()
    },
  )

  app.get(
    '/branding/images/:sha256',
    { schema: { summary: 'Get a branding theme image', params: ImageParams, tags: ['branding'] } },
    async (req, reply) => {
      const image = await getImage(ctx.database.db, req.params.sha256)
      if (!image) throw errors.image_not_found()
      return reply
        .header('content-type', image.content_type)
        .header('x-content-type-options', 'nosniff')
        .header('content-security-policy', "default-src 'none'; sandbox")
        .header('cache-control', 'public, max-age=31536000, immutable')
        .send(Buffer.from(image.data_base64, 'base64'))
    },
  )
}
