/**
 * Sending one action callback: POST to the checked, pinned address (destination.ts), no
 * redirects followed (a 3xx is a failure), a whole-call deadline (NOTIFY_ACTION_TIMEOUT,
 * default 10 s) and a response cap (NOTIFY_ACTION_RESPONSE_LIMIT, default 64 KiB; the body
 * is read only to bound it). The caller's Idempotency-Key is forwarded so the receiver can
 * deduplicate too. The outcome is a plain value, never an exception: the invocation
 * records it.
 */
import type { LookupAddress, LookupOptions } from 'node:dns'
import { HttpClientError, requestNoRedirect } from '@gatehouse/kit'
import { Agent } from 'undici'
import { type Destination, DestinationError, resolveDestination } from './destination.ts'

export interface CallbackRequest {
  url: string
  allowPrivate: boolean
  idempotencyKey: string
  headers: Record<string, string>
  body: string
  contentType: string
}

export interface CallbackLimits {
  timeoutMs: number
  maxBytes: number
}

export interface CallbackOutcome {
  outcome: 'success' | 'failure'
  statusCode: number | null
  error: string | null
  /** The response body of a success (at most the response limit). */
  body?: Buffer
}

/**
 * An undici agent whose every connection goes to the checked addresses: Node's connect asks
 * this lookup instead of DNS (all of them when it tries both families, else the first).
 */
function pinnedAgent(dest: Destination, timeoutMs: number): Agent {
  const first = dest.addresses[0]!
  const lookup = (
    _host: string,
    options: LookupOptions,
    callback: (err: Error | null, address: string | { address: string; family: number }[], family?: number) => void,
  ) => {
    if (options.all) callback(null, dest.addresses)
    else callback(null, first.address, first.family)
  }
  return new Agent({ connect: { lookup, timeout: timeoutMs }, pipelining: 0, keepAliveTimeout: 1 })
}

/** `resolve` replaces the system resolver (tests: a name that would rebind). */
export async function sendCallback(
  req: CallbackRequest,
  limits: CallbackLimits,
  resolve?: (host: string) => Promise<LookupAddress[]>,
): Promise<CallbackOutcome> {
  let dest: Destination
  try {
    dest = await resolveDestination(new URL(req.url), req.allowPrivate, resolve)
  } catch (err) {
    if (err instanceof DestinationError) return { outcome: 'failure', statusCode: null, error: err.message }
    throw err
  }
  const agent = pinnedAgent(dest, limits.timeoutMs)
  try {
    const res = await requestNoRedirect(dest.url, {
      method: 'POST',
      dispatcher: agent,
      headers: {
        ...req.headers,
        'content-type': req.contentType,
        'idempotency-key': req.idempotencyKey,
      },
      body: req.body,
      timeoutMs: limits.timeoutMs,
      maxBytes: limits.maxBytes,
    })
    return { outcome: 'success', statusCode: res.status, error: null, body: res.body }
  } catch (err) {
    if (err instanceof HttpClientError) {
      const why =
        err.code === 'network' && /abort|timeout/i.test(err.message)
          ? `no complete answer within ${limits.timeoutMs} ms`
          : err.message
      return { outcome: 'failure', statusCode: err.statusCode ?? null, error: why }
    }
    throw err
  } finally {
    agent.destroy().catch(() => {})
  }
}
