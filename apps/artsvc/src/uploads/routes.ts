/**
 * POST /api/v1/artifacts/uploads   create an upload session (signed-in user)
 * PUT  /upload/{id}                the ZIP bytes, with the upload token in a header only
 * POST /api/v1/uploads/{id}/commit signed-in user + upload token: publish the version
 */
import type { Readable } from 'node:stream'
import type { HttpApp } from '@gatehouse/kit'
import type { FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import type { AppContext } from '../context.ts'
import { errors } from '../errors.ts'
import { ID_PATTERN } from '../ids.ts'
import { commitUpload } from './publish.ts'
import { authorizeUpload, createUpload, receiveBundle } from './service.ts'

export const UPLOAD_TOKEN_HEADER = 'x-artsvc-upload-token'

const CreateUpload = Type.Object(
  {
    title: Type.String({ minLength: 1, maxLength: 200 }),
    entrypoint: Type.String({ minLength: 1, maxLength: 1024 }),
    artifact: Type.Optional(Type.String({ pattern: ID_PATTERN })),
  },
  { additionalProperties: false },
)
const IdParams = Type.Object({ id: Type.String({ maxLength: 64 }) })

/** The upload token from `X-Artsvc-Upload-Token` or `Authorization: Upload <token>`; never from the query. */
export function uploadTokenOf(req: FastifyRequest): string | undefined {
  if (req.url.includes('?')) throw errors.token_in_query()
  const header = req.headers[UPLOAD_TOKEN_HEADER]
  if (typeof header === 'string' && header.trim() !== '') return header.trim()
  const auth = req.headers.authorization
  if (auth && /^upload\s+/i.test(auth)) return auth.replace(/^upload\s+/i, '').trim()
  return undefined
}

export function uploadRoutes(app: HttpApp, ctx: AppContext) {
  app.post(
    '/api/v1/artifacts/uploads',
    { schema: { summary: 'Create an upload session', body: CreateUpload, tags: ['uploads'] } },
    async (req, reply) => {
      const principal = await ctx.auth.require(req)
      return reply.code(201).send(await createUpload(ctx, principal, req.body))
    },
  )

  app.post(
    '/api/v1/uploads/:id/commit',
    { schema: { summary: 'Publish an uploaded ZIP as a new version', params: IdParams, tags: ['uploads'] } },
    async (req, reply) => {
      const principal = await ctx.auth.require(req)
      const upload = await authorizeUpload(ctx, req.params.id, uploadTokenOf(req))
      return reply.code(201).send(await commitUpload(ctx, principal, upload))
    },
  )

  // The raw body is streamed to disk: no parser may buffer it.
  void app.register(async (raw) => {
    raw.removeAllContentTypeParsers()
    raw.addContentTypeParser('*', (_req, payload, done) => done(null, payload))
    raw.put(
      '/upload/:id',
      {
        schema: { summary: 'Upload the ZIP bytes of an upload session', params: IdParams, tags: ['uploads'] },
        bodyLimit: Number.MAX_SAFE_INTEGER,
      },
      async (req, reply) => {
        const upload = await authorizeUpload(ctx, (req.params as { id: string }).id, uploadTokenOf(req))
        const length = req.headers['content-length']
        const declared = length === undefined ? undefined : Number(length)
        const body = (req.body as Readable | undefined) ?? req.raw
        return reply.code(200).send(await receiveBundle(ctx, upload, body, declared))
      },
    )
  })
}
