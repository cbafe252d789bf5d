/**
 * The files of an app's browser client (`apps/<app>/web/`: plain ES modules, styles, icons; no
 * build step), read once at start-up because they ship with the source, and served with their
 * type, `nosniff` and an ETag so a browser revalidates them cheaply after an upgrade.
 *
 * @example
 * const assets = loadWebAssets(join(import.meta.dirname, '..', 'web'))
 * app.get('/app.js', async (req, reply) => sendWebAsset(req, reply, assets.get('app.js')!))
 */
import { createHash } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { extname, join, relative } from 'node:path'
import type { FastifyReply, FastifyRequest } from 'fastify'

export interface WebAsset {
  body: Buffer
  type: string
  etag: string
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.webmanifest': 'application/manifest+json',
}

/** Every file of a known type under `dir` (and its folders), keyed by its `/`-separated path below `dir`. */
export function loadWebAssets(dir: string): Map<string, WebAsset> {
  const assets = new Map<string, WebAsset>()
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    const type = TYPES[extname(entry.name)]
    if (!entry.isFile() || !type) continue
    const full = join(entry.parentPath, entry.name)
    const body = readFileSync(full)
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`
    assets.set(relative(dir, full).split('\\').join('/'), { body, type, etag })
  }
  return assets
}

/** Answer with `asset` (or 304 when the browser holds this version); revalidated on every load. */
export function sendWebAsset(req: FastifyRequest, reply: FastifyReply, asset: WebAsset) {
  reply.header('etag', asset.etag).header('cache-control', 'no-cache').header('x-content-type-options', 'nosniff')
  if (req.headers['if-none-match'] === asset.etag) return reply.code(304).send()
  return reply.header('content-type', asset.type).send(asset.body)
}
