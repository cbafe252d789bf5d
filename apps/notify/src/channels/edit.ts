/**
 * Editing a channel (path ours; the spec leaves it unshown):
 *   PATCH /api/v1/channels/{id}   {display_name?, description?, accent_color?, visibility?}
 *
 * The URL name is immutable (a `name` field is an unknown field: 400). Administrators may
 * change everything; a channel_admin of the channel may change its display name,
 * description and accent colour, but not its visibility, which decides who may read it
 * (403 admin_required). Readers' streams get a `channel` event with `change: "updated"`;
 * a visibility change goes to every stream without the channel's details (it may just have
 * become private), and each stream's visible channels are recomputed before the next event.
 */
import type { HttpApp } from '@gatehouse/kit'
import { Type } from 'typebox'
import { readerOf } from '../auth/guard.ts'
import type { Context } from '../context.ts'
import type { ChannelRow } from '../db/schema.ts'
import { errors } from '../errors.ts'
import { appendChange } from '../realtime/changes.ts'
import { canManageMembers, visibleChannel } from './access.ts'
import { ACCENT_COLOR, DESCRIPTION_MAX, DISPLAY_NAME_MAX } from './service.ts'
import { channelResponse } from './store.ts'

const EditChannel = Type.Object(
  {
    display_name: Type.Optional(Type.String({ minLength: 1, maxLength: DISPLAY_NAME_MAX })),
    description: Type.Optional(Type.String({ maxLength: DESCRIPTION_MAX })),
    accent_color: Type.Optional(Type.String({ pattern: ACCENT_COLOR.source })),
    visibility: Type.Optional(Type.Union([Type.Literal('public'), Type.Literal('private')])),
  },
  { additionalProperties: false, minProperties: 1 },
)

export function channelEditRoutes(app: HttpApp, ctx: Context) {
  const { db, kind } = ctx.database
  app.patch(
    '/api/v1/channels/:id',
    {
      onRequest: ctx.guard.signedIn,
      schema: {
        summary: "Edit a channel's display name, description, accent colour or visibility",
        tags: ['channels'],
        params: Type.Object({ id: Type.String({ maxLength: 64 }) }),
        body: EditChannel,
      },
    },
    async (req) => {
      const reader = readerOf(req)
      const { channel, role } = await visibleChannel(db, reader, req.params.id)
      if (!canManageMembers(reader, role)) throw errors.admin_required()
      const b = req.body
      if (b.visibility !== undefined && b.visibility !== channel.visibility && !reader.isAdmin)
        throw errors.admin_required()
      const next: ChannelRow = {
        ...channel,
        ...(b.display_name !== undefined ? { display_name: b.display_name } : {}),
        ...(b.description !== undefined ? { description: b.description } : {}),
        ...(b.accent_color !== undefined ? { accent_color: b.accent_color.toLowerCase() } : {}),
        ...(b.visibility !== undefined ? { visibility: b.visibility } : {}),
      }
      const visibilityChanged = next.visibility !== channel.visibility
      await db.transaction().execute(async (tx) => {
        await tx
          .updateTable('channels')
          .set({
            display_name: next.display_name,
            description: next.description,
            accent_color: next.accent_color,
            visibility: next.visibility,
          })
          .where('name', '=', channel.name)
          .execute()
        // Details ride on the event only for a public channel. A stream may process this change
        // after later ones (a reader's visible channels are re-read when it does), so a private
        // channel's details could reach a reader who may see the channel only by then; without
        // details, clients re-read the channel through the API, which checks access now.
        await appendChange(
          tx,
          kind,
          visibilityChanged || next.visibility === 'private'
            ? { kind: 'channel', data: { change: 'updated' } }
            : { kind: 'channel', channel: channel.name, data: { change: 'updated', channel: channelResponse(next) } },
        )
      })
      ctx.stream.wake()
      return { channel: channelResponse(next, role ?? null) }
    },
  )
}
