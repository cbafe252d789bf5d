/**
 * The content origin (ARTSVC_CONTENT_URL):
 *   GET|HEAD /t/{ticket}/{path}        a file of the ticket's version
 *   GET      /__artsvc/storage-shim.js the storage fallback injected into HTML
 * Tickets are HMAC-signed and short-lived; share tickets also stop at once when the share
 * is revoked or expires, and every ticket stops when its artifact is deleted.
 */
import { buffer } from 'node:stream/consumers'
import type { HttpApp } from '@gatehouse/kit'
import { Type } from 'typebox'
import { isHtml } from '../bundles/content-types.ts'
import type { AppContext } from '../context.ts'
import { errors } from '../errors.ts'
import { CONTENT_ROUTE, fileHeaders, htmlBody, installContentFastPath } from './fast.ts'
import type { ContentLoaders } from './loaders.ts'
import { contentSecurityPolicy, injectShim, STORAGE_SHIM } from './policy.ts'
import { requestedRange } from './ranges.ts'

const TicketParams = Type.Object({ ticket: Type.String({ maxLength: 300 }), '*': Type.String({ maxLength: 2048 }) })

/** The headers every file response of the content origin carries. */
function contentFixedHeaders(ctx: AppContext): Record<string, string> {
  return {
    'x-content-type-options': 'nosniff',
    'content-security-policy': contentSecurityPolicy(ctx.config.contentOrigin, ctx.config.publicOrigin),
    'access-control-allow-origin': '*',
    'cross-origin-resource-policy': 'cross-origin',
    'referrer-policy': 'no-referrer',
    'cache-control': 'private, max-age=60',
  }
}

export function contentRoutes(app: HttpApp, ctx: AppContext, loaders: ContentLoaders) {
  const fixedHeaders = contentFixedHeaders(ctx)
  const origin = { origin: 'content' }
  const { live, manifest, body } = loaders
  const one = (h: string | string[] | undefined) => (Array.isArray(h) ? h[0] : h)

  app.route({
    method: ['GET', 'HEAD'],
    url: CONTENT_ROUTE,
    config: origin,
    schema: { params: TicketParams, hide: true },
    handler: async (req, reply) => {
      const now = ctx.clock.now()
      const ticket = ctx.signer.verifyTicket(req.params.ticket, now)
      if (!ticket) throw errors.ticket_invalid()
      if (!(await live(ticket.versionId, ticket.shareId, now))) throw errors.ticket_invalid()
      let path = req.params['*']
      if (path === '' || path.endsWith('/')) path += 'index.html'
      const file = (await manifest(ticket.versionId)).get(path.normalize('NFC'))
      if (!file) throw errors.file_not_found()
      const headers = fileHeaders(fixedHeaders, file)
      const set = (flat: string[]) => {
        for (let i = 0; i < flat.length; i += 2) reply.header(flat[i]!, flat[i + 1])
      }
      if (req.headers['if-none-match'] === headers.etag) {
        set(headers.notModified)
        return reply.code(304).send()
      }
      const size = Number(file.size)
      const range =
        req.method === 'GET' && !isHtml(file.content_type)
          ? requestedRange(one(req.headers.range), one(req.headers['if-range']), size, headers.etag)
          : undefined
      if (range === 'unsatisfiable') {
        throw errors.range_not_satisfiable.with({ headers: { 'content-range': `bytes */${size}` } }, size)
      }
      if (range !== undefined) {
        set(headers.notModified)
        reply.header('content-range', `bytes ${range.start}-${range.end}/${size}`)
        reply.header('content-length', String(range.end - range.start + 1))
        let part: Buffer | NodeJS.ReadableStream
        try {
          part = await loaders.range(file.sha256, range)
        } catch (err) {
          throw errors.storage_unavailable.with({ cause: err })
        }
        return reply.code(206).send(part)
      }
      set(headers.ok)
      if (req.method === 'HEAD') return reply.code(200).send()
      let data: Buffer | NodeJS.ReadableStream
      try {
        data = await body(file.sha256, Number(file.size))
      } catch (err) {
        throw errors.storage_unavailable.with({ cause: err })
      }
      if (!isHtml(file.content_type)) return reply.send(data)
      return reply.send(Buffer.isBuffer(data) ? htmlBody(data) : injectShim(await buffer(data)))
    },
  })

  app.get('/__artsvc/storage-shim.js', { config: origin, schema: { hide: true } }, async (_req, reply) =>
    reply
      .header('content-type', 'text/javascript; charset=utf-8')
      .header('x-content-type-options', 'nosniff')
      .header('cache-control', 'public, max-age=3600')
      .header('cross-origin-resource-policy', 'cross-origin')
      .send(STORAGE_SHIM),
  )
}

/** After every route is registered: the lean path for cache hits (see `fast.ts`). */
export function installContentPath(app: HttpApp, ctx: AppContext, loaders: ContentLoaders) {
  // The lean path renews a liveness entry in its last half second, while it still answers from
  // it: under steady traffic no request has to wait for the check (or be held in the HTTP lane).
  const renewing = new Set<string>()
  const renewLiveness = (versionId: string, shareId: string | undefined) => {
    const key = `${versionId}/${shareId ?? ''}`
    if (renewing.has(key)) return
    renewing.add(key)
    loaders
      .live(versionId, shareId, ctx.clock.now(), true)
      .catch((err: unknown) => app.log.warn({ err }, 'renewing content liveness failed; the next request checks'))
      .finally(() => renewing.delete(key))
  }
  installContentFastPath(app, ctx, contentFixedHeaders(ctx), renewLiveness, loaders)
}
