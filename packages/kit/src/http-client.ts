/**
 * Outbound HTTP for server-side callers: undici, no redirects followed (a 3xx is an
 * error), bounded response bodies, timeouts.
 */
import { type Dispatcher, request } from 'undici'

// undici's own deadlines: a dispatcher's timeouts can fire before the request's signal.
const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT'])

export class HttpClientError extends Error {
  override readonly name = 'HttpClientError'
  readonly code: 'redirect_refused' | 'bad_status' | 'too_large' | 'network'
  readonly statusCode: number | undefined
  /**
   * A `network` failure that was a deadline: the request's own (`timeoutMs`) or the
   * dispatcher's (undici's headers, body or connect timeout), whichever fired first.
   */
  readonly timedOut: boolean
  constructor(code: HttpClientError['code'], message: string, options: { statusCode?: number; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.code = code
    this.statusCode = options.statusCode
    const cause = options.cause as { name?: string; code?: string } | undefined
    this.timedOut =
      cause?.name === 'TimeoutError' || cause?.name === 'AbortError' || TIMEOUT_CODES.has(cause?.code ?? '')
  }
}

export interface ClientRequest {
  method?: Dispatcher.HttpMethod
  headers?: Record<string, string>
  body?: string | Uint8Array
  dispatcher?: Dispatcher
  /** Largest response body read, in bytes (default 4 MiB). */
  maxBytes?: number
  /** Whole-request deadline in ms (default 30 s). */
  timeoutMs?: number
  /** Status codes accepted; others raise `bad_status` (default 2xx). */
  accept?: (status: number) => boolean
}

export interface ClientResponse {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: Buffer
  json<T = unknown>(): T
}

/**
 * Send one request; refuse redirects, cap the body, and fail with a coded error.
 *
 * @example const res = await requestNoRedirect('https://cp.example/v1/policy', { dispatcher: agent })
 */
export async function requestNoRedirect(url: string | URL, options: ClientRequest = {}): Promise<ClientResponse> {
  const maxBytes = options.maxBytes ?? 4 * 1024 * 1024
  const signal = AbortSignal.timeout(options.timeoutMs ?? 30_000)
  let res: Dispatcher.ResponseData
  try {
    res = await request(url, {
      method: options.method ?? 'GET',
      headers: options.headers,
      body: options.body,
      dispatcher: options.dispatcher,
      signal,
    })
  } catch (err) {
    throw new HttpClientError('network', `${new URL(url).origin}: ${(err as Error).message}`, { cause: err })
  }
  // 304 Not Modified answers a conditional request; it is not a redirect.
  if (res.statusCode >= 300 && res.statusCode < 400 && res.statusCode !== 304) {
    await res.body.dump()
    throw new HttpClientError(
      'redirect_refused',
      `${new URL(url).origin} answered a redirect (${res.statusCode}); redirects are not followed`,
      {
        statusCode: res.statusCode,
      },
    )
  }
  const chunks: Buffer[] = []
  let size = 0
  try {
    for await (const chunk of res.body) {
      size += chunk.length
      if (size > maxBytes) {
        res.body.destroy()
        throw new HttpClientError('too_large', `response body exceeds ${maxBytes} bytes`, {
          statusCode: res.statusCode,
        })
      }
      chunks.push(chunk)
    }
  } catch (err) {
    if (err instanceof HttpClientError) throw err
    throw new HttpClientError('network', `${new URL(url).origin}: ${(err as Error).message}`, { cause: err })
  }
  const body = Buffer.concat(chunks)
  const accept = options.accept ?? ((s: number) => s >= 200 && s < 300)
  if (!accept(res.statusCode)) {
    throw new HttpClientError('bad_status', `${new URL(url).origin} answered ${res.statusCode}`, {
      statusCode: res.statusCode,
    })
  }
  return {
    status: res.statusCode,
    headers: res.headers,
    body,
    json: <T>() => JSON.parse(body.toString('utf8')) as T,
  }
}
