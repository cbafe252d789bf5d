/**
 * Reader administration, the user panel (administrators only).
 *   POST  /api/v1/users                              create a reader
 *   GET   /api/v1/users                              list readers, with their sessions and reader tokens in force
 *   PATCH /api/v1/users/{username}                   {admin?, enabled?}: promote, demote, enable, disable
 *   POST  /api/v1/users/{username}/revoke-sessions   end every session of the reader
 *   POST  /api/v1/users/{username}/password          {password}: reset a local password
 */
import type { HttpApp } from '@gatehouse/kit'
import { Type } from 'typebox'
import { recordAudit } from '../audit/store.ts'
import { readerOf } from '../auth/guard.ts'
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from '../auth/passwords.ts'
import type { Context } from '../context.ts'
import { Username } from '../names.ts'
import { changeUser, resetPassword, revokeSessions } from './panel.ts'
import { userResponse } from './service.ts'
import { credentialCounts, listUsers } from './store.ts'

const CreateUser = Type.Object(
  {
    username: Username,
    password: Type.Optional(Type.String({ minLength: MIN_PASSWORD_LENGTH, maxLength: MAX_PASSWORD_LENGTH })),
    admin: Type.Optional(Type.Boolean()),
    kind: Type.Optional(Type.Union([Type.Literal('human'), Type.Literal('system')])),
  },
  { additionalProperties: false },
)

export function userRoutes(app: HttpApp, ctx: Context) {
  app.post(
    '/api/v1/users',
    {
      onRequest: ctx.guard.admin,
      schema: { summary: 'Create a reader (administrator)', tags: ['users'], body: CreateUser },
    },
    async (req, reply) => {
      const user = await ctx.users.create(req.body)
      await recordAudit(ctx.database.db, readerOf(req), 'user.create', user.username, {
        admin: user.is_admin === 1,
        kind: user.kind,
      })
      return reply.code(201).send({ user: userResponse(user) })
    },
  )

  app.get(
    '/api/v1/users',
    { onRequest: ctx.guard.admin, schema: { summary: 'List readers (administrator)', tags: ['users'] } },
    async () => {
      const [users, counts] = await Promise.all([listUsers(ctx.database.db), credentialCounts(ctx.database.db)])
      // What the panel's questions name: how many sessions and reader tokens a change ends.
      return {
        users: users.map((u) => ({
          ...userResponse(u),
          sessions: counts.get(u.id)?.sessions ?? 0,
          reader_tokens: counts.get(u.id)?.tokens ?? 0,
        })),
      }
    },
  )

  const db = ctx.database.db
  const params = { params: Type.Object({ username: Username }) }
  const Patch = Type.Object(
    { admin: Type.Optional(Type.Boolean()), enabled: Type.Optional(Type.Boolean()) },
    { additionalProperties: false, minProperties: 1 },
  )
  app.patch(
    '/api/v1/users/:username',
    {
      onRequest: ctx.guard.admin,
      schema: {
        summary: 'Promote, demote, enable or disable a reader (administrator)',
        tags: ['users'],
        ...params,
        body: Patch,
      },
    },
    async (req) => {
      const user = await changeUser(db, ctx.database.kind, readerOf(req), req.params.username, req.body)
      ctx.stream.wake()
      return { user: userResponse(user) }
    },
  )

  app.post(
    '/api/v1/users/:username/revoke-sessions',
    {
      onRequest: ctx.guard.admin,
      schema: { ...params, summary: 'End every session of a reader (administrator)', tags: ['users'] },
    },
    async (req) => {
      const revoked = await revokeSessions(db, ctx.database.kind, readerOf(req), req.params.username)
      ctx.stream.wake()
      return { revoked }
    },
  )

  const Password = Type.Object(
    { password: Type.String({ minLength: MIN_PASSWORD_LENGTH, maxLength: MAX_PASSWORD_LENGTH }) },
    { additionalProperties: false },
  )
  app.post(
    '/api/v1/users/:username/password',
    {
      onRequest: ctx.guard.admin,
      schema: {
        summary: "Reset a reader's local password (administrator)",
        tags: ['users'],
        ...params,
        body: Password,
      },
    },
    async (req, reply) => {
      await resetPassword(
        db,
        ctx.database.kind,
        readerOf(req),
        req.params.username,
        req.body.password,
        ctx.config.bcryptCost,
      )
      ctx.stream.wake()
      return reply.code(204).send()
    },
  )
}
