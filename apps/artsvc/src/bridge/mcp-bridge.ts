/**
 * `artsvc mcp-bridge`: a loopback-only HTTP listener for MCP clients that cannot present a
 * TLS client certificate. It forwards `/mcp` and the OAuth discovery documents to the
 * management URL over HTTPS with the configured client certificate, key and CA, and
 * streams both ways (request bodies and SSE responses flow as they arrive, nothing is
 * buffered). It rewrites only the origin (the upstream scheme, host and port, and the
 * Host header); headers, bodies and status pass through unchanged, hop-by-hop headers
 * excepted (RFC 9110 section 7.6.1).
 *
 * Credentials: the client's own `Authorization` header passes through untouched. The
 * bridge never adds one, never keeps one between requests, and never logs headers (its
 * access log has method, path, status and duration only).
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http'
import { Agent, request as httpsRequest } from 'node:https'
import { isLoopback, type Logger, parseListenAddress, StartupError, type TlsMaterial } from '@gatehouse/kit'

export interface McpBridgeOptions {
  /** host:port; the host must be a loopback address. */
  listen: string
  /** The management URL (https://…) artsvc is reached at, through its mTLS proxy. */
  target: string
  tls: TlsMaterial
  log: Logger
}

export interface McpBridge {
  /** http://host:port of the bridge. */
  url: string
  close(): Promise<void>
}

/** Paths forwarded; everything else answers 404 without reaching upstream. */
const FORWARDED = [
  /^\/mcp(\?|$)/,
  /^\/\.well-known\/oauth-protected-resource(\/mcp)?(\?|$)/,
  /^\/\.well-known\/oauth-authorization-server(\/[^?]*)?(\?|$)/,
  /^\/\.well-known\/openid-configuration(\?|$)/,
]
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
])

function forwardable(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const named = new Set(
    String(headers.connection ?? '')
      .split(',')
      .map((h) => h.trim().toLowerCase()),
  )
  const out: Record<string, string | string[]> = {}
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined || HOP_BY_HOP.has(k) || named.has(k)) continue
    out[k] = v
  }
  return out
}

/** Start the bridge; refuses a non-loopback listen address. */
export async function runMcpBridge(options: McpBridgeOptions): Promise<McpBridge> {
  const { host, port } = parseListenAddress(options.listen)
  if (!isLoopback(host))
    throw new StartupError(`mcp-bridge: --listen ${options.listen}: the bridge listens on loopback addresses only`)
  const target = new URL(options.target)
  if (target.protocol !== 'https:') throw new StartupError('mcp-bridge: ARTSVC_URL must be an https:// URL')
  const agent = new Agent({
    keepAlive: true,
    ...(options.tls.cert ? { cert: options.tls.cert } : {}),
    ...(options.tls.key ? { key: options.tls.key } : {}),
    ...(options.tls.ca ? { ca: options.tls.ca } : {}),
    minVersion: 'TLSv1.2',
    rejectUnauthorized: true,
  })
  const log = options.log

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const started = performance.now()
    const path = req.url ?? '/'
    const done = (status: number) =>
      log.info(
        { method: req.method, path: path.split('?')[0], status, ms: Math.round(performance.now() - started) },
        'bridged',
      )
    if (!FORWARDED.some((p) => p.test(path))) {
      res.writeHead(404, { 'content-type': 'application/json' })
      res.end(
        JSON.stringify({ error: { code: 'not_found', message: 'the bridge forwards /mcp and OAuth metadata only' } }),
      )
      done(404)
      return
    }
    const upstream = httpsRequest(
      {
        agent,
        host: target.hostname,
        port: target.port || 443,
        servername: target.hostname,
        method: req.method,
        path,
        headers: { ...forwardable(req.headers), host: target.host },
      },
      (up) => {
        res.writeHead(up.statusCode ?? 502, forwardable(up.headers))
        // SSE: send headers now, then each chunk as it arrives.
        res.flushHeaders()
        up.pipe(res)
        up.on('end', () => done(up.statusCode ?? 502))
      },
    )
    upstream.on('error', (err) => {
      log.warn({ err: { message: err.message, code: (err as NodeJS.ErrnoException).code } }, 'upstream failed')
      if (!res.headersSent) {
        res.writeHead(502, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ error: { code: 'bad_gateway', message: 'the management URL cannot be reached' } }))
      } else res.destroy()
      done(502)
    })
    // A client that goes away ends the upstream exchange too (an SSE stream must not linger).
    res.on('close', () => {
      if (!res.writableFinished) upstream.destroy()
    })
    req.pipe(upstream)
  }

  const server = createServer(handle)
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err) =>
      reject(new StartupError(`mcp-bridge: cannot listen on ${options.listen}: ${err.message}`)),
    )
    server.listen(port, host, () => resolve())
  })
  const address = server.address() as { port: number }
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${address.port}`
  log.info({ listen: url, target: target.origin }, 'mcp-bridge listening')
  return {
    url,
    async close() {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      agent.destroy()
    },
  }
}
