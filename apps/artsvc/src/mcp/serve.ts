/**
 * The MCP endpoint's request handling, stateless for both protocol eras so that any number
 * of artsvc processes can sit behind one proxy and no session outlives a request:
 *
 * - 2025-era requests (what MCP clients send today: `initialize`, then one POST per
 *   message) go to a server instance for the caller's audience, connected to a fresh
 *   stateless transport for this one request. Building an instance registers every tool
 *   (up to sixteen, with their schemas) only to answer one message, so idle instances are kept
 *   and reused: an instance serves one request at a time, its transport is closed
 *   after each (the SDK then drops every per-request handler and timer), the caller comes
 *   from each request's auth info, and an instance that served anything but `tools/list`,
 *   `tools/call` or `ping` (say `initialize`, which records the client) is dropped, not
 *   reused. The answer is one JSON body: no tool of ours sends progress or logging, so an
 *   event stream would only add framing, a keep-alive timer and stream plumbing.
 * - 2026-07-28 requests (per-request envelope) go to the SDK's `createMcpHandler`, which
 *   builds an instance per request.
 *
 * The route has authenticated the caller and parsed the body (bounded) before this runs.
 */
import {
  type AuthInfo,
  createMcpHandler,
  isLegacyRequest,
  legacyStatelessFallback,
  type McpHandlerRequestOptions,
  type McpServer,
  WebStandardStreamableHTTPServerTransport,
} from '@modelcontextprotocol/server'
import type { AppContext } from '../context.ts'
import { DirectTransport, directEligible, encodeAnswer, STATELESS_METHODS } from './direct.ts'
import { buildMcpServer, callerOf, type McpLimits } from './tools.ts'

/** Idle instances kept per audience: enough for the requests one process serves at once. */
const MAX_IDLE = 32
const REUSABLE_AFTER = STATELESS_METHODS

export interface McpFetch {
  /** Every request the SDK's adapter passes on (parsedBody: the route's parse of the body). */
  fetch(request: Request, options?: McpHandlerRequestOptions): Promise<Response>
  /** Whether a parsed POST body is 2025-era traffic, which `legacy` answers. */
  isLegacy(request: Request, body: unknown): Promise<boolean>
  /** A 2025-era POST: the whole JSON answer (never a stream). */
  legacy(request: Request, body: unknown, authInfo: AuthInfo | undefined): Promise<Response>
  /**
   * The hot path (mcp/direct.ts): a 2025-era request of a stateless method that passes
   * every check of the SDK's transport, answered as JSON text with status 200; undefined
   * for anything else (then `legacy` or `fetch` answers it).
   */
  direct(
    headers: Record<string, string | string[] | undefined>,
    body: unknown,
    authInfo: AuthInfo | undefined,
    signal: AbortSignal,
  ): Promise<{ status: number; body: string } | undefined>
  close(): Promise<void>
}

export function mcpFetch(
  ctx: AppContext,
  limits: McpLimits,
  options: { maxRequestBodySize: number; onerror: (err: Error) => void },
): McpFetch {
  const audienceOf = (authInfo: AuthInfo | undefined) => ({ isAdmin: callerOf({ http: { authInfo } }).isAdmin })
  const factory = (rc: { authInfo?: AuthInfo }) => buildMcpServer(ctx, audienceOf(rc.authInfo), limits)
  const modern = createMcpHandler(factory, {
    legacy: 'reject',
    maxRequestBodySize: options.maxRequestBodySize,
    onerror: options.onerror,
  })
  // GET and DELETE (2025 session operations) and unparseable bodies: the SDK's own answers.
  const fallback = legacyStatelessFallback(factory, options.onerror, { maxRequestBodySize: options.maxRequestBodySize })
  const idle = { user: [] as McpServer[], admin: [] as McpServer[] }
  // Instances that stay connected to a DirectTransport of their own, per audience.
  type Connected = { server: McpServer; transport: DirectTransport }
  const connected = { user: [] as Connected[], admin: [] as Connected[] }

  async function direct(
    headers: Record<string, string | string[] | undefined>,
    body: unknown,
    authInfo: AuthInfo | undefined,
    signal: AbortSignal,
  ): Promise<{ status: number; body: string } | undefined> {
    const method = (body as { method?: unknown } | null)?.method
    if (typeof method !== 'string' || !STATELESS_METHODS.has(method)) return undefined
    const audience = audienceOf(authInfo)
    const pool = audience.isAdmin ? connected.admin : connected.user
    let entry = pool.pop()
    if (!entry) {
      const server = buildMcpServer(ctx, audience, limits)
      const transport = new DirectTransport()
      await server.connect(transport)
      entry = { server, transport }
    }
    const message = directEligible(headers, body, entry.transport.supportedVersions)
    if (!message) {
      if (pool.length < MAX_IDLE) pool.push(entry)
      else void entry.server.close().catch(() => {})
      return undefined
    }
    const { server } = entry
    let reusable = true
    const abandon = () => {
      reusable = false
      void server.close().catch(() => {})
    }
    signal.addEventListener('abort', abandon, { once: true })
    try {
      return { status: 200, body: encodeAnswer(await entry.transport.exchange(message, authInfo), authInfo) }
    } catch (err) {
      reusable = false
      if (!signal.aborted) options.onerror(err instanceof Error ? err : new Error(String(err)))
      return {
        status: 500,
        body: JSON.stringify({ jsonrpc: '2.0', error: { code: -32603, message: 'Internal server error' }, id: null }),
      }
    } finally {
      signal.removeEventListener('abort', abandon)
      if (reusable && pool.length < MAX_IDLE) pool.push(entry)
      else void server.close().catch(() => {})
    }
  }

  async function legacy(request: Request, body: unknown, authInfo: AuthInfo | undefined): Promise<Response> {
    const audience = audienceOf(authInfo)
    const pool = audience.isAdmin ? idle.admin : idle.user
    const server = pool.pop() ?? buildMcpServer(ctx, audience, limits)
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    })
    const messages = Array.isArray(body) ? body : [body]
    let reusable = messages.every((m) => REUSABLE_AFTER.has((m as { method?: unknown } | null)?.method as string))
    const abandon = () => {
      reusable = false
      void transport.close().catch(() => {})
    }
    request.signal?.addEventListener('abort', abandon, { once: true })
    try {
      await server.connect(transport)
      return await transport.handleRequest(request, { authInfo, parsedBody: body })
    } catch (err) {
      reusable = false
      options.onerror(err instanceof Error ? err : new Error(String(err)))
      return Response.json(
        { jsonrpc: '2.0', error: { code: -32603, message: 'Internal server error' }, id: null },
        { status: 500 },
      )
    } finally {
      request.signal?.removeEventListener('abort', abandon)
      await transport.close().catch(() => {})
      // Closing the transport detaches the instance from it.
      if (reusable && !server.isConnected() && pool.length < MAX_IDLE) pool.push(server)
      else void server.close().catch(() => {})
    }
  }

  const isLegacy = (request: Request, body: unknown) =>
    isLegacyRequest(request, body, { maxRequestBodySize: options.maxRequestBodySize })

  return {
    async fetch(request, opts) {
      const body = opts?.parsedBody
      if (request.method !== 'POST' || body === undefined) return fallback(request, opts)
      if (await isLegacy(request, body)) return legacy(request, body, opts?.authInfo)
      return modern.fetch(request, opts)
    },
    isLegacy,
    legacy,
    direct,
    async close() {
      await modern.close()
      idle.user.length = 0
      idle.admin.length = 0
      const all = [...connected.user, ...connected.admin]
      connected.user.length = 0
      connected.admin.length = 0
      await Promise.all(all.map((c) => c.server.close().catch(() => {})))
    },
  }
}
