/**
 * Channels and their members. The channel id in paths is its URL-safe name, which is
 * immutable.
 *   POST   /api/v1/channels                            administrator; returns a publishing token once
 *   GET    /api/v1/channels                            channels the reader may see, with their role
 *   GET    /api/v1/channels/{id}                       one visible channel
 *   GET    /api/v1/channels/{id}/members               administrator or channel_admin
 *   PUT    /api/v1/channels/{id}/members/{username}    administrator or channel_admin; {role}
 *   DELETE /api/v1/channels/{id}/members/{username}    administrator or channel_admin
 */
import type { HttpApp } from '@gatehouse/kit'
import { Type } from 'typebox'
import { recordAudit } from '../audit/store.ts'
import { readerOf } from '../auth/guard.ts'
import type { Context } from '../context.ts'
import { errors } from '../errors.ts'
import { ChannelName, Username } from '../names.ts'
import { appendChange } from '../realtime/changes.ts'
import { findUserByName } from '../users/store.ts'
import { canManageMembers, visibleChannel } from './access.ts'
import { ACCENT_COLOR, createChannel, DESCRIPTION_MAX, DISPLAY_NAME_MAX } from './service.ts'
import { channelResponse, deleteMember, listMembers, listVisibleChannels, upsertMember } from './store.ts'

const CreateChannel = Type.Object(
  {
    name: ChannelName,
    display_name: Type.Optional(Type.String({ minLength: 1, maxLength: DISPLAY_NAME_MAX })),
    description: Type.Optional(Type.String({ maxLength: DESCRIPTION_MAX })),
    accent_color: Type.Optional(Type.String({ pattern: ACCENT_COLOR.source })),
    visibility: Type.Optional(Type.Union([Type.Literal('public'), Type.Literal('private')])),
  },
  { additionalProperties: false },
)

const Role = Type.Union([Type.Literal('viewer'), Type.Literal('operator'), Type.Literal('channel_admin')])
const ChannelParams = Type.Object({ id: Type.String({ maxLength: 64 }) })
const MemberParams = Type.Object({ id: Type.String({ maxLength: 64 }), username: Username })

export function channelRoutes(app: HttpApp, ctx: Context) {
  const { guard } = ctx
  const { db, kind } = ctx.database

  app.post(
    '/api/v1/channels',
    {
      onRequest: guard.admin,
      schema: {
        summary: 'Create a channel (administrator; returns a publishing token once)',
        tags: ['channels'],
        body: CreateChannel,
      },
    },
    async (req, reply) => {
      const { channel, hook } = await createChannel(db, kind, readerOf(req), req.body)
      return reply.code(201).send({
        channel: channelResponse(channel),
        publishing: { webhook_id: hook.id, token: hook.token, path: hook.path },
      })
    },
  )

  app.get(
    '/api/v1/channels',
    {
      onRequest: guard.signedIn,
      schema: { summary: 'List the channels the reader may see, with their role', tags: ['channels'] },
    },
    async (req) => {
      const rows = await listVisibleChannels(db, readerOf(req))
      return { channels: rows.map((r) => channelResponse(r, r.role)) }
    },
  )

  app.get(
    '/api/v1/channels/:id',
    {
      onRequest: guard.signedIn,
      schema: { summary: 'Get a visible channel', tags: ['channels'], params: ChannelParams },
    },
    async (req) => {
      const { channel, role } = await visibleChannel(db, readerOf(req), req.params.id)
      return { channel: channelResponse(channel, role ?? null) }
    },
  )

  app.get(
    '/api/v1/channels/:id/members',
    {
      onRequest: guard.signedIn,
      schema: {
        summary: "List a channel's members (administrator or channel admin)",
        tags: ['channels'],
        params: ChannelParams,
      },
    },
    async (req) => {
      const reader = readerOf(req)
      const { channel, role } = await visibleChannel(db, reader, req.params.id)
      if (!canManageMembers(reader, role)) throw errors.admin_required()
      return { members: await listMembers(db, channel.name) }
    },
  )

  app.put(
    '/api/v1/channels/:id/members/:username',
    {
      onRequest: guard.signedIn,
      schema: {
        summary: 'Add a channel member or change their role (administrator or channel admin)',
        tags: ['channels'],
        params: MemberParams,
        body: Type.Object({ role: Role }, { additionalProperties: false }),
      },
    },
    async (req, reply) => {
      const reader = readerOf(req)
      const { channel, role } = await visibleChannel(db, reader, req.params.id)
      if (!canManageMembers(reader, role)) throw errors.admin_required()
      const user = await findUserByName(db, req.params.username)
      if (!user) throw errors.user_not_found(req.params.username)
      const created = await db.transaction().execute(async (tx) => {
        const created = await upsertMember(tx, channel.name, user.id, req.body.role)
        await recordAudit(tx, reader, 'member.set', `${channel.name}/${user.username}`, { role: req.body.role })
        await appendChange(tx, kind, {
          kind: 'membership',
          channel: channel.name,
          userId: user.id,
          data: { change: 'member', channel: channelResponse(channel), role: req.body.role },
        })
        return created
      })
      ctx.stream.wake()
      return reply.code(created ? 201 : 200).send({ member: { username: user.username, role: req.body.role } })
    },
  )

  app.delete(
    '/api/v1/channels/:id/members/:username',
    {
      onRequest: guard.signedIn,
      schema: {
        summary: 'Remove a channel member (administrator or channel admin)',
        tags: ['channels'],
        params: MemberParams,
      },
    },
    async (req, reply) => {
      const reader = readerOf(req)
      const { channel, role } = await visibleChannel(db, reader, req.params.id)
      if (!canManageMembers(reader, role)) throw errors.admin_required()
      const user = await findUserByName(db, req.params.username)
      const removed =
        user !== undefined &&
        (await db.transaction().execute(async (tx) => {
          if (!(await deleteMember(tx, channel.name, user.id))) return false
          await recordAudit(tx, reader, 'member.remove', `${channel.name}/${user.username}`)
          await appendChange(tx, kind, {
            kind: 'membership',
            channel: channel.name,
            userId: user.id,
            data: { change: 'removed', channel: channelResponse(channel), role: null },
          })
          return true
        }))
      if (!removed) throw errors.user_not_found(req.params.username)
      ctx.stream.wake()
      return reply.code(204).send()
    },
  )
}
