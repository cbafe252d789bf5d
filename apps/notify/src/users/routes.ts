/**
 * Reader administration (administrators only).
 *   POST /api/v1/users   create a reader
 *   GET  /api/v1/users   list readers
 */
import type { HttpApp } from '@gatehouse/kit'
import { Type } from 'typebox'
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from '../auth/passwords.ts'
import type { Context } from '../context.ts'
import { Username } from '../names.ts'
import { userResponse } from './service.ts'
import { listUsers } from './store.ts'

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
  app.post('/api/v1/users', { onRequest: ctx.guard.admin, schema: { body: CreateUser } }, async (req, reply) => {
    const user = await ctx.users.create(req.body)
    return reply.code(201).send({ user: userResponse(user) })
  })

  app.get('/api/v1/users', { onRequest: ctx.guard.admin }, async () => {
    return { users: (await listUsers(ctx.database.db)).map(userResponse) }
  })
}
