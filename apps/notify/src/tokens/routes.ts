/**
 * Reader API tokens, each reader managing their own (the user panel's API and the CLI's):
 *   POST   /api/v1/me/tokens        {name} -> 201 {token, secret}; the secret is shown once
 *   GET    /api/v1/me/tokens        the reader's tokens (never the secrets)
 *   DELETE /api/v1/me/tokens/{id}   revoke at once
 * A token is used as `Authorization: Bearer ntr_...` on any reader endpoint; it needs no
 * Origin header (only requests carrying the session cookie do).
 */
import type { HttpApp } from '@gatehouse/kit'
import { Type } from 'typebox'
import { recordAudit } from '../audit/store.ts'
import { readerOf } from '../auth/guard.ts'
import type { Context } from '../context.ts'
import { errors } from '../errors.ts'
import { createReaderToken } from './credentials.ts'
import { listReaderTokens, readerTokenResponse, removeReaderToken } from './store.ts'

const TokenJson = Type.Object({
  id: Type.String(),
  name: Type.String(),
  created_at: Type.String({ format: 'date-time' }),
  last_used_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
})

export function readerTokenRoutes(app: HttpApp, ctx: Context) {
  app.post(
    '/api/v1/me/tokens',
    {
      onRequest: ctx.guard.signedIn,
      schema: {
        summary: 'Create a reader API token for scripts (the secret is returned once)',
        tags: ['reader tokens'],
        body: Type.Object({ name: Type.String({ minLength: 1, maxLength: 100 }) }, { additionalProperties: false }),
        response: { 201: Type.Object({ token: TokenJson, secret: Type.String() }) },
      },
    },
    async (req, reply) => {
      const reader = readerOf(req)
      const { row, secret } = await ctx.database.db.transaction().execute(async (tx) => {
        const created = await createReaderToken(tx, reader.id, req.body.name)
        await recordAudit(tx, reader, 'reader_token.create', reader.username, {
          id: created.row.id,
          name: created.row.name,
        })
        return created
      })
      return reply.code(201).send({ token: readerTokenResponse(row), secret })
    },
  )

  app.get(
    '/api/v1/me/tokens',
    {
      onRequest: ctx.guard.signedIn,
      schema: { summary: "List the reader's API tokens", tags: ['reader tokens'] },
    },
    async (req) => ({
      tokens: (await listReaderTokens(ctx.database.db, readerOf(req).id)).map(readerTokenResponse),
    }),
  )

  app.delete(
    '/api/v1/me/tokens/:id',
    {
      onRequest: ctx.guard.signedIn,
      schema: {
        summary: 'Revoke a reader API token',
        tags: ['reader tokens'],
        params: Type.Object({ id: Type.String({ maxLength: 64 }) }),
      },
    },
    async (req, reply) => {
      const reader = readerOf(req)
      const removed = await ctx.database.db.transaction().execute(async (tx) => {
        const token = await removeReaderToken(tx, req.params.id, reader.id)
        if (token) {
          await recordAudit(tx, reader, 'reader_token.revoke', token.username, { id: req.params.id, name: token.name })
        }
        return token
      })
      if (!removed) throw errors.reader_token_not_found(req.params.id)
      return reply.code(204).send()
    },
  )
}
