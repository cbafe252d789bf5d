/**
 * The hot path of the MCP endpoint: one 2025-era `tools/call`, `tools/list` or `ping` POST
 * (what an agent sends all day), answered by a reused server instance that stays connected
 * to a `DirectTransport` of its own.
 *
 * The SDK's Streamable HTTP transport is built for one request at a time in stateless mode:
 * every request would need a web `Request` (headers copied), a fresh transport connected
 * and closed (the close settles the protocol's handlers with a new `SdkError`, stack trace
 * included), a `Response.json` of the answer and reading that body back. For a request
 * that passes every check that transport makes, none of that changes the answer, so here:
 *
 * - `directEligible` repeats the transport's checks and the SDK's own classification (the
 *   SDK's exported predicates, not copies): `Accept` naming both JSON and event streams,
 *   a JSON content type, a `MCP-Protocol-Version` the server supports (or none), a single
 *   JSON-RPC request (parsed with the SDK's schema) that `classifyInboundRequest` calls
 *   2025-era, and a method that leaves no state behind. Anything else (initialize,
 *   notifications, batches, bad headers, the 2026-07-28 protocol) takes the SDK's
 *   transport, which gives every error answer as before.
 * - The server instance handles the message exactly as it would from the SDK's transport
 *   (its own dispatch, input and output validation, error results); the transport only
 *   hands the message in and takes the one response out. Stateless mode has no session,
 *   no event store and no per-tool scope challenge here, so the transport's other steps
 *   have nothing to do. Notifications a handler might send mid-request have no stream in
 *   JSON-answer mode and are dropped, as the SDK's transport drops them.
 * - The answer is serialized once: a tool result's text block already holds the
 *   serialized JSON of its structured content (MCP: "a tool that returns structured
 *   content SHOULD also return the serialized JSON in a TextContent block"), so that same
 *   string is spliced in as `structuredContent` instead of serializing the list again.
 */
import {
  type AuthInfo,
  classifyInboundRequest,
  isJsonContentType,
  type JSONRPCMessage,
  type JSONRPCRequest,
  parseJSONRPCMessage,
  type Transport,
} from '@modelcontextprotocol/server'

/** Methods that leave nothing in a server instance: those may be served by a reused one. */
export const STATELESS_METHODS = new Set(['tools/list', 'tools/call', 'ping'])

/**
 * Per request (keyed by the request's own auth info object, which the SDK hands to the
 * tool as it is): the structured content a tool returned and the JSON text `run`
 * serialized it to (mcp/tools.ts).
 */
const serialized = new WeakMap<object, { structured: Record<string, unknown>; text: string }>()

/** Remember that `text` is `JSON.stringify(structured)` for the request `key`. */
export function rememberSerialized(key: object, structured: Record<string, unknown>, text: string) {
  serialized.set(key, { structured, text })
}

type Headers = Record<string, string | string[] | undefined>
const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v.join(', ') : v)

/**
 * The request as the SDK's transport would take it (its checks, its parse), when it is one
 * 2025-era request of a stateless method; otherwise undefined (the SDK's transport answers).
 */
export function directEligible(
  headers: Headers,
  body: unknown,
  supportedVersions: readonly string[],
): JSONRPCRequest | undefined {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return undefined
  const method = (body as { method?: unknown }).method
  if (typeof method !== 'string' || !STATELESS_METHODS.has(method) || !('id' in body)) return undefined
  const accept = one(headers.accept)
  if (!accept?.includes('application/json') || !accept.includes('text/event-stream')) return undefined
  if (!isJsonContentType(one(headers['content-type']) ?? null)) return undefined
  const version = one(headers['mcp-protocol-version'])
  if (version !== undefined && !supportedVersions.includes(version)) return undefined
  let message: JSONRPCMessage
  try {
    message = parseJSONRPCMessage(body)
  } catch {
    return undefined
  }
  const era = classifyInboundRequest({
    httpMethod: 'POST',
    protocolVersionHeader: version,
    mcpMethodHeader: one(headers['mcp-method']),
    mcpNameHeader: one(headers['mcp-name']),
    body: message,
  })
  if (era.kind !== 'legacy') return undefined
  return message as JSONRPCRequest
}

/**
 * A transport that one server instance stays connected to: `exchange` hands it one request
 * and resolves with the response to it. One exchange at a time (the pool sees to that).
 */
export class DirectTransport implements Transport {
  onclose?: () => void
  onerror?: (error: Error) => void
  onmessage?: Transport['onmessage']
  sessionId = undefined
  supportedVersions: readonly string[] = []
  #pending: { id: unknown; resolve: (m: JSONRPCMessage) => void; reject: (e: Error) => void } | undefined
  #closed = false

  async start() {}

  setSupportedProtocolVersions(versions: string[]) {
    this.supportedVersions = versions
  }

  async send(message: JSONRPCMessage) {
    const pending = this.#pending
    if (!pending || !('id' in message) || message.id !== pending.id) return
    if (!('result' in message) && !('error' in message)) return
    this.#pending = undefined
    pending.resolve(message)
  }

  exchange(message: JSONRPCRequest, authInfo: AuthInfo | undefined): Promise<JSONRPCMessage> {
    if (this.#closed) return Promise.reject(new Error('MCP transport closed'))
    if (this.#pending) return Promise.reject(new Error('MCP transport busy'))
    return new Promise((resolve, reject) => {
      this.#pending = { id: message.id, resolve, reject }
      this.onmessage?.(message, authInfo ? { authInfo } : undefined)
    })
  }

  async close() {
    if (this.#closed) return
    this.#closed = true
    const pending = this.#pending
    this.#pending = undefined
    pending?.reject(new Error('MCP transport closed'))
    this.onclose?.()
  }
}

/**
 * The JSON-RPC answer as JSON text. When it is the result of a tool whose structured
 * content `run` serialized for this request (`key`), that text is reused. The SDK checks a
 * tool result against its wire schema on the way out, which copies the structured content
 * object (same keys in the same order, same values): so the reuse applies only when the
 * answer's structured content has exactly the remembered members and its text block is the
 * remembered text; anything else is serialized in full.
 */
export function encodeAnswer(message: JSONRPCMessage, key: object | undefined): string {
  const remembered = key === undefined ? undefined : serialized.get(key)
  const result = (message as { result?: Record<string, unknown> }).result
  if (remembered === undefined || result === undefined) return JSON.stringify(message)
  const content = result.content as { type?: unknown; text?: unknown }[] | undefined
  const structured = result.structuredContent as Record<string, unknown> | undefined
  if (
    !content?.some((c) => c.type === 'text' && c.text === remembered.text) ||
    !sameMembers(structured, remembered.structured)
  )
    return JSON.stringify(message)
  const { structuredContent: _, ...rest } = result
  const { result: _result, ...envelope } = message as { result: unknown }
  const head = JSON.stringify({ ...envelope, result: rest })
  // `{...,"result":{...}}`: the result is the last member, so its closing brace is the
  // second-to-last character.
  const inner = head.slice(0, -2)
  return `${inner}${inner.endsWith('{') ? '' : ','}"structuredContent":${remembered.text}}}`
}

/** Same own enumerable keys in the same order with identical values (so the same JSON). */
function sameMembers(a: Record<string, unknown> | undefined, b: Record<string, unknown>): boolean {
  if (a === b) return true
  if (a === null || typeof a !== 'object' || Array.isArray(a)) return false
  const ka = Object.keys(a)
  const kb = Object.keys(b)
  if (ka.length !== kb.length) return false
  for (let i = 0; i < ka.length; i++) if (ka[i] !== kb[i] || a[ka[i]!] !== b[kb[i]!]) return false
  return true
}
