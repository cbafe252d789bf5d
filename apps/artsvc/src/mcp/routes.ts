/**
 * any /mcp                                          Streamable HTTP MCP endpoint (bearer tokens)
 * GET /.well-known/oauth-protected-resource/mcp     RFC 9728 protected-resource metadata
 *
 * Stateless (mcp/serve.ts). The caller is authenticated before the body is read; the body
 * is read and parsed once here, bounded by MCP_MAX_REQUEST_BYTES: a larger request is
 * refused (before reading when its length is declared) with a message that names the
 * upload pair.
 */
import type { IncomingMessage } from 'node:http'
import type { HttpApp } from '@gatehouse/kit'
import { toNodeHandler } from '@modelcontextprotocol/node'
import { type AuthInfo, DEFAULT_MAX_REQUEST_BODY_SIZE } from '@modelcontextprotocol/server'
import { DELEGATION_HEADER } from '../auth/authenticator.ts'
import type { AppContext } from '../context.ts'
import { errors } from '../errors.ts'
import { mcpGate } from './gate.ts'
import { mcpFetch } from './serve.ts'

/** The SDK's own default (4 MiB): the bound of one MCP request body. */
export const MCP_MAX_REQUEST_BYTES = DEFAULT_MAX_REQUEST_BODY_SIZE
export const METADATA_PATH = '/.well-known/oauth-protected-resource/mcp'

export function protectedResourceMetadata(ctx: AppContext) {
  return {
    resource: `${ctx.config.publicOrigin}/mcp`,
    authorization_servers: ctx.config.oidcIssuer ? [new URL(ctx.config.oidcIssuer).href.replace(/\/$/, '')] : [],
    scopes_supported: [ctx.config.oauthScope],
    bearer_methods_supported: ['header'],
    resource_name: 'artsvc',
    resource_documentation: `${ctx.config.publicOrigin}/docs`,
  }
}

export function mcpRoutes(app: HttpApp, ctx: AppContext, bearer: AppContext['bearer']) {
  const inlineBytes = Math.min(MCP_MAX_REQUEST_BYTES, ctx.config.maxBundleBytes)
  const handler = mcpFetch(
    ctx,
    { inlineBytes },
    {
      maxRequestBodySize: MCP_MAX_REQUEST_BYTES,
      onerror: (err) => ctx.logger.warn({ err }, 'MCP request refused'),
    },
  )
  app.addHook('onClose', () => handler.close())
  const serve = toNodeHandler(handler, { maxRequestBodySize: MCP_MAX_REQUEST_BYTES })
  const tooLarge = () => errors.inline_bundle_too_large.with({ headers: { connection: 'close' } }, inlineBytes)
  const metadataUrl = `${ctx.config.publicOrigin}${METADATA_PATH}`
  const gate = bearer
    ? mcpGate(bearer, ctx.config.oauthScope, metadataUrl, protectedResourceMetadata(ctx).resource)
    : undefined

  app.get(
    METADATA_PATH,
    { schema: { summary: "Get the MCP endpoint's OAuth protected-resource metadata (RFC 9728)", tags: ['mcp'] } },
    async (_req, reply) => {
      if (!gate) throw errors.mcp_unavailable()
      return reply.header('access-control-allow-origin', '*').send(protectedResourceMetadata(ctx))
    },
  )

  // The SDK reads the body itself (bounded): no parser may consume it.
  void app.register(async (raw) => {
    raw.removeAllContentTypeParsers()
    raw.addContentTypeParser('*', (_req, payload, done) => done(null, payload))
    raw.route({
      method: ['GET', 'POST', 'DELETE'],
      url: '/mcp',
      schema: { summary: 'MCP endpoint (Streamable HTTP, bearer token)', tags: ['mcp'] },
      bodyLimit: Number.MAX_SAFE_INTEGER,
      handler: async (req, reply) => {
        if (!gate || !ctx.config.oauthAudience) throw errors.mcp_unavailable()
        const declared = Number(req.headers['content-length'] ?? 0)
        if (declared > MCP_MAX_REQUEST_BYTES) throw tooLarge()
        const auth = req.headers.authorization
        const checked = await gate(auth)
        if ('challenge' in checked) {
          const res = checked.challenge
          reply.code(res.status)
          res.headers.forEach((value, key) => {
            reply.header(key, value)
          })
          return reply.send(await res.text())
        }
        const principal = await ctx.auth.bearerPrincipal(checked.identity, req.headers[DELEGATION_HEADER])
        const authInfo: AuthInfo = { ...checked.authInfo, extra: { principal } }
        const body = req.method === 'POST' ? await readJson(req.raw, MCP_MAX_REQUEST_BYTES, tooLarge) : undefined
        if (body !== undefined) {
          // The common case, a 2025-era POST, answers one JSON body: sent as any other reply
          // (one write with its length) instead of through the SDK's streaming adapter.
          const aborted = new AbortController()
          const abort = () => aborted.abort()
          // The hottest case (tools/call, tools/list, ping) skips the web Request too.
          reply.raw.once('close', abort)
          const answer = await handler
            .direct(req.headers, body, authInfo, aborted.signal)
            .finally(() => reply.raw.off('close', abort))
          if (answer) return reply.code(answer.status).type('application/json').send(answer.body)
          const request = webRequest(req.raw, aborted.signal)
          if (await handler.isLegacy(request, body)) {
            reply.raw.once('close', abort)
            const res = await handler.legacy(request, body, authInfo).finally(() => reply.raw.off('close', abort))
            reply.code(res.status)
            res.headers.forEach((value, key) => {
              reply.header(key, value)
            })
            // The bytes as the SDK encoded them: no decoding to a string and encoding again.
            return reply.send(res.body === null ? undefined : Buffer.from(await res.arrayBuffer()))
          }
        }
        reply.hijack()
        await serve(Object.assign(req.raw, { auth: authInfo }), reply.raw, body)
      },
    })
  })
}

/** A body-less web Request with the node request's URL and headers (the body is parsed already). */
function webRequest(raw: IncomingMessage, signal: AbortSignal): Request {
  const headers = new Headers()
  for (const [name, value] of Object.entries(raw.headers)) {
    if (value === undefined) continue
    if (Array.isArray(value)) for (const v of value) headers.append(name, v)
    else headers.set(name, value)
  }
  return new Request(`http://${raw.headers.host ?? 'localhost'}${raw.url ?? '/mcp'}`, {
    method: 'POST',
    headers,
    signal,
  })
}

/**
 * The request body as JSON, or undefined when it is empty or not JSON (the SDK answers
 * those with its own JSON-RPC errors); more than `max` bytes rejects with `tooLarge()`
 * and reads no further (the refusal closes the connection).
 */
function readJson(raw: IncomingMessage, max: number, tooLarge: () => Error): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size <= max) return void chunks.push(chunk)
      raw.off('data', onData).off('end', onEnd).pause()
      reject(tooLarge())
    }
    const onEnd = () => {
      if (size === 0) return resolve(undefined)
      try {
        resolve(JSON.parse(Buffer.concat(chunks, size).toString('utf8')))
      } catch {
        resolve(undefined)
      }
    }
    raw.on('data', onData).on('end', onEnd).once('error', reject)
  })
}
