/**
 * Reader API tokens, each reader managing their own (the user panel's API and the CLI's):
 *   POST   /api/v1/me/tokens        {name, expires_at?} -> 201 {token, secret}; the secret is shown once
 *   GET    /api/v1/me/tokens        the reader's tokens (never the secrets)
 *   DELETE /api/v1/me/tokens/{id}   revoke at once
 * A token is used as `Authorization: Bearer ntr_...` on any reader endpoint; it needs no
 * Origin header (only requests carrying the session cookie do).
 */
import type { HttpApp } from '@gatehouse/kit'
import { parseTimestampMillis } from '@gatehouse/kit/timestamps.ts'
import { Type } from 'typebox'
import { readerOf } from '../auth/guard.ts'
import type { Context } from '../context.ts'
import { errors } from '../errors.ts'
import { issueReaderToken } from './credentials.ts'
import { listReaderTokens, readerTokenResponse, revokeReaderToken } from './store.ts'

const TokenJson = Type.Object({
  id: Type.String(),
  name: Type.String(),
  created_at: Type.String({ format: 'date-time' }),
  last_used_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  expires_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
})

/** `expires_at` as stored (UTC ISO text), or null; a time not in the future is refused. */
function tokenExpiry(text: string | undefined): string | null {
  if (text === undefined) return null
  const at = parseTimestampMillis(text)
  if (at === undefined) throw errors.invalid_payload('body.expires_at must be an RFC 3339 time')
  if (at <= Date.now()) throw errors.invalid_payload('body.expires_at must be in the future')
  return new Date(at).toISOString()
}

export function readerTokenRoutes(app: HttpApp, ctx: Context) {
  app.post(
    '/api/v1/me/tokens',
    {
      onRequest: ctx.guard.signedIn,
      schema: {
        summary: 'Create a reader API token for scripts (the secret is returned once)',
        tags: ['reader tokens'],
        body: Type.Object(
          {
            name: Type.String({ minLength: 1, maxLength: 100 }),
            // Any RFC 3339 offset; stored in UTC. Absent: the token never expires.
            expires_at: Type.Optional(Type.String({ format: 'date-time', maxLength: 40 })),
          },
          { additionalProperties: false },
        ),
        response: { 201: Type.Object({ token: TokenJson, secret: Type.String() }) },
      },
    },
    async (req, reply) => {
      const reader = readerOf(req)
      const expiresAt = tokenExpiry(req.body.expires_at)
      const { row, secret } = await issueReaderToken(ctx.database.db, reader, reader, req.body.name, expiresAt)
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
      const removed = await revokeReaderToken(ctx.database.db, ctx.database.kind, reader, req.params.id, reader.id)
      if (!removed) throw errors.reader_token_not_found(req.params.id)
      return reply.code(204).send()
    },
  )
}
