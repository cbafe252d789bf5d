/**
 * The content origin's lean path: a handler the kit puts in front of Fastify
 * (`app.setFastPath`; it runs in the kit's HTTP lane, which reads requests off the socket
 * without node:http's per-request objects, or behind node:http). It answers only what it can answer synchronously from
 * memory — a GET/HEAD `/t/{ticket}/{path}` on the content host whose ticket was already
 * verified, whose liveness was checked less than LIVENESS_TTL_MS ago, whose version
 * manifest is cached and (for GET) whose body is in the small-blob cache, or that names a
 * file the cached manifest does not hold (404) — and hands every other request, untouched,
 * to Fastify. So every other error (403, 421, 405, 503 while closing) and every large file
 * still takes the one full path in `routes.ts`, and the lean path can only ever repeat what
 * that path's loaders (`loaders.ts`) decided. In the
 * lane, a first fetch or a stale liveness entry is held while those loaders run (`warm`),
 * then answered here; behind node:http it takes the full path.
 *
 * The responses are the same as Fastify's (headers from `contentHeaders`, the kit's
 * `x-request-id`; the kit counts them in the same metrics and access line);
 * `test/content-fast.test.ts` compares both paths header by header. While the server is
 * closing the kit does not call the lean path, so Fastify answers 503.
 */
import type { FastAnswer, FastRequest, HttpApp } from '@gatehouse/kit'
import { isHtml } from '../bundles/content-types.ts'
import type { AppContext } from '../context.ts'
import type { VersionFileRow } from '../db/schema.ts'
import { errors } from '../errors.ts'
import type { Ticket } from '../viewer/signing.ts'
import { LATIN1_MAX, LIVENESS_TTL_MS, SMALL_BLOB } from './caches.ts'
import type { ContentLoaders } from './loaders.ts'
import { CONTENT_HOST_HEADERS, injectShim, SHIM_TAG } from './policy.ts'

export const CONTENT_ROUTE = '/t/:ticket/*'
/** ASCII is already in NFC: most paths skip the ICU call. */
const ASCII = /^[\x00-\x7f]*$/

/**
 * The full route's 404 for a path the version does not hold (`errors.file_not_found` through
 * the kit's error handler, with the content host's headers). Answered here as well, so that a
 * browser asking for a file a site lacks (its /favicon.ico, say) keeps its connection in the
 * kit's HTTP lane instead of moving it to node:http for good.
 */
const MISSING_BODY = JSON.stringify(errors.file_not_found().toJSON())
const MISSING_HEADERS = [
  ...Object.entries(CONTENT_HOST_HEADERS).flat(),
  'content-type',
  'application/json; charset=utf-8',
  'content-length',
  String(Buffer.byteLength(MISSING_BODY)),
]

/** Header lines of one file's responses (everything but `x-request-id`, `date`, `connection`). */
export interface FileHeaders {
  /** Flat `[name, value, …]` for 200 responses, `content-length` included. */
  ok: string[]
  /** For 304 responses (no `content-length`). */
  notModified: string[]
  etag: string
}

/** Per manifest row; rows are immutable (versions never change) and held by the manifest cache. */
const headerCache = new WeakMap<VersionFileRow, FileHeaders>()
/** HTML bodies with the storage shim inserted, per cached blob. */
const htmlCache = new WeakMap<Buffer, Buffer>()
/**
 * Small bodies as latin1 strings (one char per byte, so lossless for any bytes), per
 * cached blob: `res.end(string, 'latin1')` lets Node send the header block and the body in
 * one string write instead of a two-buffer writev, which a profile showed to be the
 * largest single cost of a cached response.
 */
const latin1Cache = new WeakMap<Buffer, string>()

function latin1Of(body: Buffer): string | Buffer {
  if (body.length > LATIN1_MAX) return body
  let s = latin1Cache.get(body)
  if (s === undefined) {
    s = body.toString('latin1')
    latin1Cache.set(body, s)
  }
  return s
}

export function fileHeaders(fixed: Record<string, string>, file: VersionFileRow): FileHeaders {
  let h = headerCache.get(file)
  if (!h) {
    const etag = `"${file.sha256}"`
    const html = isHtml(file.content_type)
    const common = [
      ...Object.entries(fixed).flat(),
      'content-type',
      file.content_type,
      'etag',
      etag,
      // Ranges of the stored bytes (a video seeking); not of HTML, whose bytes get the shim.
      ...(html ? [] : ['accept-ranges', 'bytes']),
    ]
    const length = Number(file.size) + (html ? SHIM_TAG.length : 0)
    h = { ok: [...common, 'content-length', String(length)], notModified: common, etag }
    headerCache.set(file, h)
  }
  return h
}

export function htmlBody(blob: Buffer): Buffer {
  let b = htmlCache.get(blob)
  if (!b) {
    b = injectShim(blob)
    htmlCache.set(blob, b)
  }
  return b
}

/** A content request the lean path may answer: its verified ticket and the file's path in the version. */
interface Located {
  method: 'GET' | 'HEAD'
  ticket: Ticket
  path: string
}

/**
 * Put the lean path in front of Fastify (the kit's `setFastPath`; call after the routes are
 * registered). In the kit's HTTP lane, a request it declines for a cold cache (liveness
 * older than LIVENESS_TTL_MS, a first fetch) is held while `warm` fills the caches through
 * the full route's own loaders, then answered here: the connection stays in the lane.
 */
export function installContentFastPath(
  app: HttpApp,
  ctx: AppContext,
  fixed: Record<string, string>,
  renewLiveness: (versionId: string, shareId: string | undefined) => void,
  loaders: ContentLoaders,
) {
  const { caches, signer, config } = ctx
  const defaultPort = new URL(config.contentUrl).protocol === 'https:' ? '443' : '80'
  const hosts = new Set([config.contentHost, `${config.contentHost}:${defaultPort}`])

  const locate = (req: FastRequest, now: number): Located | undefined => {
    const method = req.method
    if (method !== 'GET' && method !== 'HEAD') return undefined
    const url = req.url
    if (url === undefined || !url.startsWith('/t/')) return undefined
    // A byte range takes the full path (routes.ts), as every unusual request does.
    if (req.headers.range !== undefined) return undefined
    const host = req.headers.host
    if (typeof host !== 'string' || (!hosts.has(host) && !hosts.has(host.toLowerCase()))) return undefined
    const slash = url.indexOf('/', 3)
    if (slash < 0 || slash - 3 > 300) return undefined
    const q = url.indexOf('?', slash)
    let path = q < 0 ? url.slice(slash + 1) : url.slice(slash + 1, q)
    // Percent-encoded names, odd lengths and everything else unusual take the full path.
    if (path.length > 2048 || path.includes('%')) return undefined
    const ticket = signer.verifyTicket(url.slice(3, slash), now)
    if (!ticket) return undefined
    if (path === '' || path.endsWith('/')) path += 'index.html'
    return { method, ticket, path: ASCII.test(path) ? path : path.normalize('NFC') }
  }

  const serve = (req: FastRequest): FastAnswer | undefined => {
    const now = ctx.clock.now()
    const at = locate(req, now)
    if (at === undefined) return undefined
    const { ticket } = at
    const liveUntil = caches.liveUntil(`${ticket.versionId}/${ticket.shareId ?? ''}`)
    if (liveUntil === undefined || liveUntil <= now) return undefined
    if (liveUntil - now < LIVENESS_TTL_MS / 2) renewLiveness(ticket.versionId, ticket.shareId)
    const manifest = caches.manifests.get(ticket.versionId)
    if (!manifest) return undefined
    const file = manifest.get(at.path)
    if (!file) {
      caches.fastResponses++
      return {
        status: 404,
        headers: MISSING_HEADERS,
        body: at.method === 'GET' ? MISSING_BODY : undefined,
        route: CONTENT_ROUTE,
      }
    }
    const headers = fileHeaders(fixed, file)
    let status = 200
    let body: Buffer | string | undefined
    if (req.headers['if-none-match'] === headers.etag) status = 304
    else if (at.method === 'GET') {
      const blob = caches.blobs.get(file.sha256)
      if (!blob) return undefined
      body = latin1Of(isHtml(file.content_type) ? htmlBody(blob) : blob)
    }
    caches.fastResponses++
    return { status, headers: status === 304 ? headers.notModified : headers.ok, body, route: CONTENT_ROUTE }
  }

  // One warming per version, share and file at a time: the connections that ask for the same
  // cold file together wait for one set of reads. Failures are left to the full route to report.
  const warming = new Map<string, Promise<void>>()
  const warm = (req: FastRequest): Promise<void> | undefined => {
    const now = ctx.clock.now()
    const at = locate(req, now)
    if (at === undefined) return undefined
    const { versionId, shareId } = at.ticket
    const etag = req.headers['if-none-match']
    const key = `${versionId}/${shareId ?? ''}/${at.method}/${at.path}/${etag ?? ''}`
    let pending = warming.get(key)
    if (pending === undefined) {
      pending = (async () => {
        if (!(await loaders.live(versionId, shareId, now))) return
        const file = (await loaders.manifest(versionId)).get(at.path)
        // HEAD and 304 answers need no body; large files are streamed by the full route.
        if (file === undefined || at.method === 'HEAD' || etag === fileHeaders(fixed, file).etag) return
        if (Number(file.size) <= SMALL_BLOB) await loaders.body(file.sha256, Number(file.size))
      })().finally(() => warming.delete(key))
      warming.set(key, pending)
    }
    return pending
  }

  app.setFastPath(serve, { lane: config.httpLane, warm })
}
