/**
 * The content origin (ARTSVC_CONTENT_URL):
 *   GET|HEAD /t/{ticket}/{path}        a file of the ticket's version
 *   GET      /__artsvc/storage-shim.js the storage fallback injected into HTML
 * Tickets are HMAC-signed and short-lived; share tickets also stop at once when the share
 * is revoked or expires, and every ticket stops when its artifact is deleted.
 */
import { buffer } from 'node:stream/consumers'
import type { HttpApp } from '@gatehouse/kit'
import { sql } from 'kysely'
import { Type } from 'typebox'
import { isHtml } from '../bundles/content-types.ts'
import type { AppContext } from '../context.ts'
import { errors } from '../errors.ts'
import { shareIsLive } from '../shares/store.ts'
import { SMALL_BLOB } from './caches.ts'
import { contentSecurityPolicy, injectShim, SHIM_TAG, STORAGE_SHIM } from './policy.ts'

const TicketParams = Type.Object({ ticket: Type.String({ maxLength: 300 }), '*': Type.String({ maxLength: 2048 }) })

export function contentRoutes(app: HttpApp, ctx: AppContext) {
  const csp = contentSecurityPolicy(ctx.config.contentOrigin, ctx.config.publicOrigin)
  const caches = ctx.caches
  const fixedHeaders = {
    'x-content-type-options': 'nosniff',
    'content-security-policy': csp,
    'access-control-allow-origin': '*',
    'cross-origin-resource-policy': 'cross-origin',
    'referrer-policy': 'no-referrer',
    'cache-control': 'private, max-age=60',
  }
  const origin = { origin: 'content' }

  const manifest = async (versionId: string) => {
    let m = caches.manifests.get(versionId)
    if (!m) {
      const rows = await ctx.db.selectFrom('version_files').selectAll().where('version_id', '=', versionId).execute()
      m = new Map(rows.map((r) => [r.path, r]))
      caches.manifests.set(versionId, m)
    }
    return m
  }

  const live = async (versionId: string, shareId: string | undefined, now: number) => {
    const key = `${versionId}/${shareId ?? ''}`
    if (caches.isLive(key, now)) return true
    const row = await ctx.db
      .selectFrom('versions')
      .innerJoin('artifacts', 'artifacts.id', 'versions.artifact_id')
      .select(sql<number>`1`.as('ok'))
      .where('versions.id', '=', versionId)
      .where('artifacts.deleted_at', 'is', null)
      .executeTakeFirst()
    const ok = row !== undefined && (!shareId || (await shareIsLive(ctx.db, shareId, now)))
    if (ok) caches.markLive(key, now)
    return ok
  }

  const body = async (sha256: string, size: number): Promise<Buffer | NodeJS.ReadableStream> => {
    const cached = caches.blobs.get(sha256)
    if (cached) return cached
    const stream = await ctx.store.read(sha256)
    if (size > SMALL_BLOB) return stream
    const bytes = await buffer(stream)
    caches.blobs.set(sha256, bytes)
    return bytes
  }

  app.route({
    method: ['GET', 'HEAD'],
    url: '/t/:ticket/*',
    config: origin,
    schema: { params: TicketParams, hide: true },
    handler: async (req, reply) => {
      const now = ctx.now()
      const ticket = ctx.signer.verifyTicket(req.params.ticket, now)
      if (!ticket) throw errors.ticket_invalid()
      if (!(await live(ticket.versionId, ticket.shareId, now))) throw errors.ticket_invalid()
      let path = req.params['*']
      if (path === '' || path.endsWith('/')) path += 'index.html'
      const file = (await manifest(ticket.versionId)).get(path.normalize('NFC'))
      if (!file) throw errors.file_not_found()
      reply.headers(fixedHeaders).header('content-type', file.content_type).header('etag', `"${file.sha256}"`)
      if (req.headers['if-none-match'] === `"${file.sha256}"`) return reply.code(304).send()
      const html = isHtml(file.content_type)
      if (req.method === 'HEAD') {
        return reply
          .header('content-length', Number(file.size) + (html ? SHIM_TAG.length : 0))
          .code(200)
          .send()
      }
      let data: Buffer | NodeJS.ReadableStream
      try {
        data = await body(file.sha256, Number(file.size))
      } catch (err) {
        throw errors.storage_unavailable.with({ cause: err })
      }
      if (html) return reply.send(injectShim(Buffer.isBuffer(data) ? data : await buffer(data)))
      return reply.header('content-length', Number(file.size)).send(data)
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
