/**
 * Client of the Cloudflare-style DNS API (zones lookup, records with paging, the batch
 * endpoint). No redirects, bounded bodies, a deadline per request; the token is sent only as a
 * bearer header. Failures become a ProviderApiError saying what kind they are.
 */

import { HttpClientError, requestNoRedirect } from '@gatehouse/kit/http-client.ts'
import type { Dispatcher } from 'undici'
import type { ApiRecord } from './records.ts'

export interface ProviderZone {
  id: string
  name: string
  name_servers: string[]
}

export interface Batch {
  deletes: { id: string }[]
  patches: ({ id: string } & Record<string, unknown>)[]
  posts: Record<string, unknown>[]
}

export type ProviderFailure = 'timeout' | 'unavailable' | 'forbidden' | 'rejected'

export class ProviderApiError extends Error {
  override readonly name = 'ProviderApiError'
  readonly kind: ProviderFailure
  readonly status: number | undefined
  constructor(kind: ProviderFailure, message: string, status?: number) {
    super(message)
    this.kind = kind
    this.status = status
  }
}

interface Envelope<T> {
  success?: boolean
  errors?: { code?: number; message?: string }[]
  result?: T
  result_info?: { page?: number; total_pages?: number }
}

const MAX_PAGES = 200

export interface ProviderClientOptions {
  apiUrl: string
  token: () => string
  dispatcher?: Dispatcher
  timeoutMs: number
}

/** The connection closed or reset before an answer (not a timeout, not a refused connection). */
function connectionDropped(err: unknown): boolean {
  const code = (err as { cause?: { code?: string } }).cause?.code
  return code === 'UND_ERR_SOCKET' || code === 'ECONNRESET' || code === 'EPIPE'
}

export class ProviderClient {
  readonly options: ProviderClientOptions
  constructor(options: ProviderClientOptions) {
    this.options = options
  }

  async #call<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<Envelope<T>> {
    const { apiUrl, dispatcher, timeoutMs } = this.options
    const headers: Record<string, string> = { authorization: `Bearer ${this.options.token()}` }
    if (body !== undefined) headers['content-type'] = 'application/json'
    const deadline = Date.now() + timeoutMs
    const send = () =>
      requestNoRedirect(`${apiUrl.replace(/\/+$/, '')}${path}`, {
        method,
        headers,
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        ...(dispatcher ? { dispatcher } : {}),
        timeoutMs: Math.max(1, deadline - Date.now()),
        maxBytes: 64 * 1024 * 1024,
        accept: () => true,
      })
    let res: Awaited<ReturnType<typeof requestNoRedirect>>
    try {
      try {
        res = await send()
      } catch (first) {
        // A read on a kept-alive connection the API closed as it was reused fails before any
        // answer: sent again once, within the same deadline. A write (POST) never is.
        if (method !== 'GET' || !connectionDropped(first) || deadline - Date.now() < 100) throw first
        res = await send()
      }
    } catch (err) {
      // The request's deadline or the agent's headers timeout (the same length): both a timeout.
      if (err instanceof HttpClientError && err.timedOut) {
        throw new ProviderApiError(
          'timeout',
          `the provider API did not answer ${method} ${path} within ${timeoutMs} ms`,
        )
      }
      const why = err instanceof HttpClientError ? err.message : String(err)
      throw new ProviderApiError('unavailable', `the provider API is unreachable: ${why}`)
    }
    let env: Envelope<T>
    try {
      env = res.json<Envelope<T>>()
    } catch {
      throw new ProviderApiError('unavailable', `the provider API answered ${res.status} without JSON`, res.status)
    }
    if (res.status >= 200 && res.status < 300 && env.success !== false) return env
    const detail = (env.errors ?? []).map((e) => `${e.code ?? '?'}: ${e.message ?? ''}`).join('; ') || 'no detail'
    const kind: ProviderFailure =
      res.status === 401 || res.status === 403
        ? 'forbidden'
        : res.status >= 500 || res.status === 429
          ? 'unavailable'
          : 'rejected'
    throw new ProviderApiError(
      kind,
      `the provider API answered ${res.status} to ${method} ${path.split('?')[0]} (${detail})`,
      res.status,
    )
  }

  /** The zone with this name, or undefined when the token sees none. */
  async zone(name: string): Promise<ProviderZone | undefined> {
    const env = await this.#call<ProviderZone[]>('GET', `/zones?name=${encodeURIComponent(name)}&per_page=5`)
    const zone = (env.result ?? []).find((z) => z.name.toLowerCase() === name)
    return zone ? { id: zone.id, name: zone.name.toLowerCase(), name_servers: zone.name_servers ?? [] } : undefined
  }

  /** Every DNS record of the zone (all pages). */
  async records(zoneId: string): Promise<ApiRecord[]> {
    const out: ApiRecord[] = []
    for (let page = 1; page <= MAX_PAGES; page++) {
      const env = await this.#call<ApiRecord[]>(
        'GET',
        `/zones/${encodeURIComponent(zoneId)}/dns_records?page=${page}&per_page=1000`,
      )
      out.push(...(env.result ?? []))
      if ((env.result_info?.total_pages ?? 1) <= page) return out
    }
    throw new ProviderApiError('rejected', `the zone has more than ${MAX_PAGES} pages of records`)
  }

  /** One batch request: deletes, patches, then posts, applied by the provider as one unit. */
  async batch(zoneId: string, batch: Batch): Promise<void> {
    await this.#call('POST', `/zones/${encodeURIComponent(zoneId)}/dns_records/batch`, batch)
  }
}
