/**
 * any /mcp                                          Streamable HTTP MCP endpoint (bearer tokens)
 * GET /.well-known/oauth-protected-resource/mcp     RFC 9728 protected-resource metadata
 *
 * Stateless: every POST is served by a fresh McpServer bound to its caller (the SDK's
 * createMcpHandler), so any number of artsvc processes can sit behind one proxy and no
 * session survives a request. The body is streamed to the SDK, bounded by
 * MCP_MAX_REQUEST_BYTES; a larger request is refused before reading with a message that
 * names the upload pair.
 */
import type { HttpApp } from '@gatehouse/kit'
import { toNodeHandler } from '@modelcontextprotocol/node'
import { type AuthInfo, createMcpHandler, DEFAULT_MAX_REQUEST_BODY_SIZE } from '@modelcontextprotocol/server'
import { DELEGATION_HEADER } from '../auth/authenticator.ts'
import type { Principal } from '../auth/principal.ts'
import type { AppContext } from '../context.ts'
import { errors } from '../errors.ts'
import { mcpGate } from './gate.ts'
import { buildMcpServer } from './tools.ts'

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
  const handler = createMcpHandler(
    (rc) => {
      const principal = (rc.authInfo?.extra as { principal?: Principal } | undefined)?.principal
      // The route below always authenticates first; a request without a principal is a bug.
      if (!principal) throw new TypeError('MCP request without an authenticated principal')
      return buildMcpServer(ctx, principal, { inlineBytes })
    },
    {
      maxRequestBodySize: MCP_MAX_REQUEST_BYTES,
      onerror: (err) => ctx.log.warn({ err }, 'MCP request refused'),
    },
  )
  const serve = toNodeHandler(handler)
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
        if (declared > MCP_MAX_REQUEST_BYTES)
          throw errors.inline_bundle_too_large.with({ headers: { connection: 'close' } }, inlineBytes)
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
        reply.hijack()
        await serve(Object.assign(req.raw, { auth: authInfo }), reply.raw)
      },
    })
  })
}
