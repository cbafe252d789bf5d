/**
 * POST /v1/signals/batch?instance_id= to the control plane: HTTPS only, redirects refused
 * (kit `requestNoRedirect`), a bearer token or a client certificate, the publisher's fencing
 * epoch in the body.
 */
import { readFileSync } from 'node:fs'
import {
  createTlsAgent,
  HttpClientError,
  requestNoRedirect,
  type Signal,
  type SignalBatch,
  type SignalBatchResult,
} from '@gatehouse/kit'
import type { ControlPlane } from '../config.ts'

export class PublishError extends Error {
  override readonly name = 'PublishError'
  /** HTTP status when the control plane answered. */
  readonly status: number | undefined
  /** `stale_publisher_epoch`, `redirect_refused`, `network`, `bad_status`, or the server's code. */
  readonly code: string
  constructor(code: string, message: string, status?: number) {
    super(message)
    this.code = code
    this.status = status
  }
}

function readPem(path: string, what: string): Buffer {
  try {
    return readFileSync(path)
  } catch (err) {
    throw new TypeError(`control_plane.${what} ${path} cannot be read (${(err as NodeJS.ErrnoException).code ?? err})`)
  }
}

export class SignalClient {
  readonly #url: string
  readonly #instance: string
  readonly #headers: Record<string, string>
  readonly #agent: ReturnType<typeof createTlsAgent>

  constructor(cp: ControlPlane) {
    if (!cp.url.startsWith('https://')) throw new TypeError('control_plane.url must use https')
    this.#instance = cp.instanceId
    this.#url = `${cp.url}/v1/signals/batch?instance_id=${encodeURIComponent(cp.instanceId)}`
    this.#headers = { accept: 'application/json', 'content-type': 'application/json' }
    if (cp.auth.kind === 'token') this.#headers.authorization = `Bearer ${cp.auth.token}`
    const ca = cp.auth.ca ? readPem(cp.auth.ca, 'ca') : undefined
    this.#agent = createTlsAgent({
      ...(ca ? { ca } : {}),
      ...(cp.auth.kind === 'mtls'
        ? { cert: readPem(cp.auth.clientCert, 'client_cert'), key: readPem(cp.auth.clientKey, 'client_key') }
        : {}),
      ...(cp.serverName ? { servername: cp.serverName } : {}),
      connectTimeoutMs: 5_000,
      requestTimeoutMs: 15_000,
    })
  }

  async send(signals: Signal[], epoch: number): Promise<SignalBatchResult> {
    const body: SignalBatch = { instance_id: this.#instance, signals, epoch }
    let res: Awaited<ReturnType<typeof requestNoRedirect>>
    try {
      res = await requestNoRedirect(this.#url, {
        method: 'POST',
        headers: this.#headers,
        body: JSON.stringify(body),
        dispatcher: this.#agent,
        timeoutMs: 15_000,
        accept: () => true,
      })
    } catch (err) {
      if (err instanceof HttpClientError) throw new PublishError(err.code, err.message, err.statusCode)
      throw new PublishError('network', (err as Error).message)
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
      const message = typeof e?.message === 'string' ? e.message : ''
      throw new PublishError(
        code,
        `control plane answered ${res.status} ${code}${message ? `: ${message}` : ''}`,
        res.status,
      )
    }
    return json as SignalBatchResult
  }

  async close(): Promise<void> {
    await this.#agent.destroy().catch(() => {})
  }
}
