/**
 * The SSH gate's HTTP client for the control plane (spec: Authentication 1-2): HTTPS only,
 * redirects refused (even to another HTTPS URL: the final URL is configured directly),
 * exactly one credential: a bearer token or a client certificate (mTLS).
 */
import { readFileSync } from 'node:fs'
import {
  createTlsAgent,
  HttpClientError,
  type ObservationBatch,
  type ObservationBatchResult,
  type PolicyResponse,
  readPolicyResponse,
  requestNoRedirect,
} from '@gatehouse/kit'

/** Where and how to reach the control plane (the shape of sshproxy's `ControlPlaneConfig`). */
export interface SyncControlPlane {
  /** Base URL, https:// only, without a trailing path to the endpoints. */
  url: string
  instanceId: string
  auth:
    | { kind: 'token'; token: string; ca?: string }
    | { kind: 'mtls'; clientCert: string; clientKey: string; ca: string }
  /** TLS server name to verify when the URL host and the certificate differ. */
  serverName?: string
  /** Default 30 s. */
  syncIntervalMs?: number
}

/** A refused upload or pull, with what the control plane said. */
export class SyncError extends Error {
  override readonly name = 'SyncError'
  /** HTTP status when the control plane answered; undefined for network failures and redirects. */
  readonly status: number | undefined
  /** `redirect_refused`, `network`, `bad_status`, `too_large`, `bad_response`, or the server's error code. */
  readonly code: string
  constructor(code: string, message: string, status?: number, options?: { cause?: unknown }) {
    super(message, options)
    this.code = code
    this.status = status
  }
}

function readFile(path: string, what: string): Buffer {
  try {
    return readFileSync(path)
  } catch (err) {
    throw new TypeError(`control_plane.${what} ${path} cannot be read (${(err as NodeJS.ErrnoException).code ?? err})`)
  }
}

/** Check the configuration; a mistake is a TypeError (the gate's config loader reports these first). */
export function checkControlPlane(cp: SyncControlPlane): URL {
  let url: URL
  try {
    url = new URL(cp.url)
  } catch {
    throw new TypeError('control_plane.url must be an absolute https:// URL')
  }
  if (url.protocol !== 'https:') throw new TypeError('control_plane.url must use https (http is refused)')
  if (url.username || url.password || url.search || url.hash) {
    throw new TypeError('control_plane.url must be a plain base URL (no credentials, query or fragment)')
  }
  if (!cp.instanceId) throw new TypeError('control_plane.instance_id is required')
  const auth = cp.auth as { kind: string; token?: string; clientCert?: string; clientKey?: string }
  if (auth.kind === 'token' && (!auth.token || auth.clientCert || auth.clientKey)) {
    throw new TypeError('control_plane: exactly one auth method: a token, or client_cert + client_key + ca')
  }
  if (auth.kind === 'mtls' && (auth.token || !auth.clientCert || !auth.clientKey || !(cp.auth as { ca?: string }).ca)) {
    throw new TypeError('control_plane: mutual TLS needs client_cert, client_key and ca, and no token')
  }
  if (auth.kind !== 'token' && auth.kind !== 'mtls') throw new TypeError('control_plane: unknown auth method')
  return url
}

export class ControlPlaneClient {
  readonly #base: string
  readonly #instance: string
  readonly #headers: Record<string, string>
  readonly #agent: ReturnType<typeof createTlsAgent>

  constructor(cp: SyncControlPlane) {
    const url = checkControlPlane(cp)
    this.#base = url.toString().replace(/\/+$/, '')
    this.#instance = cp.instanceId
    const ca = cp.auth.ca ? readFile(cp.auth.ca, 'ca') : undefined
    this.#headers = { accept: 'application/json' }
    if (cp.auth.kind === 'token') this.#headers.authorization = `Bearer ${cp.auth.token}`
    this.#agent = createTlsAgent({
      ...(ca ? { ca } : {}),
      ...(cp.auth.kind === 'mtls'
        ? { cert: readFile(cp.auth.clientCert, 'client_cert'), key: readFile(cp.auth.clientKey, 'client_key') }
        : {}),
      ...(cp.serverName ? { servername: cp.serverName } : {}),
      connectTimeoutMs: 10_000,
      requestTimeoutMs: 30_000,
    })
  }

  /** POST /v1/observations/batch?instance_id= */
  async upload(observations: ObservationBatch['observations']): Promise<ObservationBatchResult> {
    const body: ObservationBatch = { instance_id: this.#instance, observations }
    const res = await this.#send(
      'POST',
      `/v1/observations/batch?instance_id=${encodeURIComponent(this.#instance)}`,
      body,
    )
    return res as ObservationBatchResult
  }

  /** GET /v1/policy?instance_id=&since= */
  async policy(since: string | undefined): Promise<PolicyResponse> {
    const q = since === undefined ? '' : `&since=${encodeURIComponent(since)}`
    const json = await this.#send('GET', `/v1/policy?instance_id=${encodeURIComponent(this.#instance)}${q}`)
    try {
      return readPolicyResponse(json)
    } catch (err) {
      throw new SyncError('bad_response', (err as Error).message)
    }
  }

  /** Abort requests in flight and release connections. */
  async close(): Promise<void> {
    await this.#agent.destroy().catch(() => {})
  }

  async #send(method: 'GET' | 'POST', path: string, body?: unknown): Promise<unknown> {
    const url = this.#base + path
    let res: Awaited<ReturnType<typeof requestNoRedirect>>
    try {
      res = await requestNoRedirect(url, {
        method,
        headers: body === undefined ? this.#headers : { ...this.#headers, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        dispatcher: this.#agent,
        maxBytes: 64 * 1024 * 1024,
        timeoutMs: 60_000,
        accept: () => true,
      })
    } catch (err) {
      if (err instanceof HttpClientError) throw new SyncError(err.code, err.message, err.statusCode, { cause: err })
      throw new SyncError('network', (err as Error).message, undefined, { cause: err })
    }
    let json: unknown
    try {
      json = res.json()
    } catch {
      json = undefined
    }
    if (res.status < 200 || res.status >= 300) {
      const e = (json as { error?: { code?: unknown; message?: unknown } } | undefined)?.error
      const code = typeof e?.code === 'string' ? e.code : 'bad_status'
      const message = typeof e?.message === 'string' ? e.message : `answered ${res.status}`
      throw new SyncError(code, `${method} ${path.split('?')[0]}: ${res.status} ${message}`, res.status)
    }
    if (json === undefined) throw new SyncError('bad_response', `${method} ${path.split('?')[0]}: the body is not JSON`)
    return json
  }
}
