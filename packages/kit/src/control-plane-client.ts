/**
 * The one HTTP client every edge node (sshproxy, tlsgate, websignal) uses to talk to the
 * control plane (spec edge-gate.md, Authentication 1-2): HTTPS only, redirects refused (even to
 * another HTTPS URL: the final URL is configured directly), exactly one credential: a bearer
 * token or a client certificate (mTLS). Each node endpoint is one method; errors carry the
 * control plane's `code` so callers match on it (`stale_publisher_epoch`, HTTP 409, ...).
 *
 * @example
 * const client = new ControlPlaneClient({ url: 'https://cp.example', instanceId: 'gate-1',
 *   auth: { kind: 'token', token } })
 * await client.uploadObservations(page)            // POST /v1/observations/batch (≤ 16 per page)
 * const policy = await client.policy(cursor)       // GET /v1/policy?since=
 * await client.close()
 */
import { X509Certificate } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { createSecureContext } from 'node:tls'
import { bundleExpiry, certificateExpiresAt } from './certificate-expiry.ts'
import {
  type ObservationBatch,
  type ObservationBatchResult,
  type PolicyResponse,
  readPolicyResponse,
  type Signal,
  type SignalBatch,
  type SignalBatchResult,
  type SmtpReport,
  type SmtpReportResult,
} from './edge-wire.ts'
import { HttpClientError, requestNoRedirect } from './http-client.ts'
import type { Logger } from './logger.ts'
import { createTlsAgent } from './tls.ts'

/** Where and how a node reaches the control plane (the `control_plane` section of its config). */
export interface ControlPlaneTarget {
  /** Base URL, https:// only, without a trailing path to the endpoints. */
  url: string
  instanceId: string
  auth:
    | { kind: 'token'; token: string; ca?: string }
    | { kind: 'mtls'; clientCert: string; clientKey: string; ca: string }
  /** TLS server name to verify when the URL host and the certificate differ. */
  serverName?: string
}

export interface ControlPlaneTimeouts {
  /** TCP + TLS connect, ms (default 10 s). */
  connectTimeoutMs?: number
  /** Headers and body of one response, ms (default 30 s). */
  requestTimeoutMs?: number
  /** Whole request, ms (default 60 s). */
  deadlineMs?: number
}

/** A refused or failed request, with what the control plane said. */
export class ControlPlaneError extends Error {
  override readonly name = 'ControlPlaneError'
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

function readPem(path: string, what: string): Buffer {
  try {
    return readFileSync(path)
  } catch (err) {
    throw new TypeError(`control_plane.${what} ${path} cannot be read (${(err as NodeJS.ErrnoException).code ?? err})`)
  }
}

/**
 * Check a target; a mistake is a TypeError (the nodes' config loaders report these earlier,
 * in their own words; this is the last line).
 */
export function checkControlPlaneTarget(cp: ControlPlaneTarget): URL {
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
  const auth = cp.auth as { kind: string; token?: string; clientCert?: string; clientKey?: string; ca?: string }
  if (auth.kind === 'token' && (!auth.token || auth.clientCert || auth.clientKey)) {
    throw new TypeError('control_plane: exactly one auth method: a token, or client_cert + client_key + ca')
  }
  if (auth.kind === 'mtls' && (auth.token || !auth.clientCert || !auth.clientKey || !auth.ca)) {
    throw new TypeError('control_plane: mutual TLS needs client_cert, client_key and ca, and no token')
  }
  if (auth.kind !== 'token' && auth.kind !== 'mtls') throw new TypeError('control_plane: unknown auth method')
  return url
}

export class ControlPlaneClient {
  readonly instanceId: string
  readonly #base: string
  readonly #headers: Record<string, string>
  readonly #target: ControlPlaneTarget
  readonly #timeouts: ControlPlaneTimeouts
  #agent: ReturnType<typeof createTlsAgent>
  readonly #deadlineMs: number
  #clockOffsetMs: number | undefined
  #certificateExpiresAt: number | undefined
  #caExpiry: { at: number; subject: string } | undefined

  constructor(cp: ControlPlaneTarget, timeouts: ControlPlaneTimeouts = {}) {
    const url = checkControlPlaneTarget(cp)
    this.#base = url.toString().replace(/\/+$/, '')
    this.instanceId = cp.instanceId
    this.#target = cp
    this.#timeouts = timeouts
    this.#deadlineMs = timeouts.deadlineMs ?? 60_000
    this.#headers = { accept: 'application/json' }
    if (cp.auth.kind === 'token') this.#headers.authorization = `Bearer ${cp.auth.token}`
    const { agent, cert, ca } = this.#newAgent()
    this.#agent = agent
    this.#certificateExpiresAt = cert ? certificateExpiresAt(cert) : undefined
    this.#caExpiry = ca ? bundleExpiry(ca) : undefined
  }

  /** The certificate of the `ca` bundle that expires first; undefined without one (the system's CAs). */
  get caExpiry(): { at: number; subject: string } | undefined {
    return this.#caExpiry
  }

  /** When the client certificate in use expires (ms since the epoch); undefined with a token. */
  get clientCertificateExpiresAt(): number | undefined {
    return this.#certificateExpiresAt
  }

  /**
   * The control plane's clock minus this host's, in ms, from the `Date` header of the last
   * quick answer (within ±0.5 s plus half the round trip), or undefined before one.
   */
  get clockOffsetMs(): number | undefined {
    return this.#clockOffsetMs
  }

  /** Whether the credentials come from files that a renewal replaces (a client certificate or a CA). */
  get hasCredentialFiles(): boolean {
    return this.#target.auth.kind === 'mtls' || this.#target.auth.ca !== undefined
  }

  /**
   * Read the client certificate, key and CA files again (a renewal replaced them) for the
   * requests from now on; those in flight finish on the old connections. With a bearer token,
   * `token` (read again from where the config found it, after `edgegate node rotate-token`)
   * replaces it. A file that cannot be read, or a key that does not match its certificate,
   * throws and changes nothing. Returns the client certificate's expiry when there is one, and
   * whether the token changed when one was given.
   */
  reloadCredentials(token?: string): { validTo?: string; token?: 'changed' | 'unchanged' } {
    if (token !== undefined && this.#target.auth.kind !== 'token') {
      throw new TypeError('the control plane is configured with mutual TLS, not a token; restart to change the method')
    }
    if (token !== undefined && (token === '' || /[\s\u0000-\u001f\u007f]/.test(token))) {
      throw new TypeError('the new token is empty or holds white space or control characters')
    }
    let validTo: string | undefined
    if (this.hasCredentialFiles) {
      const { agent, cert, ca } = this.#newAgent(true)
      validTo = cert ? new X509Certificate(cert).validTo : undefined
      const old = this.#agent
      this.#agent = agent
      this.#certificateExpiresAt = cert ? certificateExpiresAt(cert) : undefined
      this.#caExpiry = ca ? bundleExpiry(ca) : undefined
      void old.close().catch(() => {})
    }
    let changed: 'changed' | 'unchanged' | undefined
    if (token !== undefined) {
      const header = `Bearer ${token}`
      changed = header === this.#headers.authorization ? 'unchanged' : 'changed'
      this.#headers.authorization = header
    }
    return { ...(validTo === undefined ? {} : { validTo }), ...(changed === undefined ? {} : { token: changed }) }
  }

  #newAgent(check = false): { agent: ReturnType<typeof createTlsAgent>; cert?: Buffer; ca?: Buffer } {
    const { auth, serverName } = this.#target
    const ca = auth.ca ? readPem(auth.ca, 'ca') : undefined
    const pair =
      auth.kind === 'mtls'
        ? { cert: readPem(auth.clientCert, 'client_cert'), key: readPem(auth.clientKey, 'client_key') }
        : undefined
    // undici would only find a mismatched key at the next connection, as a failed sync.
    if (check) createSecureContext({ ...(ca ? { ca } : {}), ...pair })
    const agent = createTlsAgent({
      ...(ca ? { ca } : {}),
      ...pair,
      ...(serverName ? { servername: serverName } : {}),
      connectTimeoutMs: this.#timeouts.connectTimeoutMs ?? 10_000,
      requestTimeoutMs: this.#timeouts.requestTimeoutMs ?? 30_000,
    })
    return { agent, ...(pair ? { cert: pair.cert } : {}), ...(ca ? { ca } : {}) }
  }

  /** POST /v1/observations/batch?instance_id= (one page: at most `EDGE_LIMITS.pageSize`). */
  async uploadObservations(observations: ObservationBatch['observations']): Promise<ObservationBatchResult> {
    const body: ObservationBatch = { instance_id: this.instanceId, observations }
    return (await this.#send('POST', '/v1/observations/batch', body)) as ObservationBatchResult
  }

  /** GET /v1/policy?instance_id=&since= (`since` omitted before the first pull). */
  async policy(since: string | undefined): Promise<PolicyResponse> {
    const json = await this.#send('GET', '/v1/policy', undefined, since === undefined ? {} : { since })
    try {
      return readPolicyResponse(json)
    } catch (err) {
      throw new ControlPlaneError('bad_response', (err as Error).message)
    }
  }

  /** POST /v1/signals/batch?instance_id= with the publisher's fencing epoch. */
  async sendSignals(signals: Signal[], epoch: number): Promise<SignalBatchResult> {
    const body: SignalBatch = { instance_id: this.instanceId, signals, epoch }
    return (await this.#send('POST', '/v1/signals/batch', body)) as SignalBatchResult
  }

  /** POST /v1/smtp/reports?instance_id=; a stale or conflicting generation is a ControlPlaneError with status 409. */
  async sendSmtpReport(report: Omit<SmtpReport, 'instance_id'>): Promise<SmtpReportResult> {
    const body: SmtpReport = { ...report, instance_id: this.instanceId }
    return (await this.#send('POST', '/v1/smtp/reports', body)) as SmtpReportResult
  }

  /** Abort requests in flight and release connections. */
  async close(): Promise<void> {
    await this.#agent.destroy().catch(() => {})
  }

  #noteClock(date: string | string[] | undefined, sentAt: number, receivedAt: number): void {
    const server = typeof date === 'string' ? Date.parse(date) : Number.NaN
    // A slow answer (a large page) says little about when its header was written.
    if (!Number.isFinite(server) || receivedAt - sentAt > 5000) return
    // The header has whole seconds: its middle is half a second later.
    this.#clockOffsetMs = server + 500 - (sentAt + receivedAt) / 2
  }

  async #send(
    method: 'GET' | 'POST',
    path: string,
    body?: unknown,
    query: Record<string, string> = {},
  ): Promise<unknown> {
    const params = new URLSearchParams({ instance_id: this.instanceId, ...query })
    let res: Awaited<ReturnType<typeof requestNoRedirect>>
    const sentAt = Date.now()
    try {
      res = await requestNoRedirect(`${this.#base}${path}?${params}`, {
        method,
        headers: body === undefined ? this.#headers : { ...this.#headers, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        dispatcher: this.#agent,
        maxBytes: 64 * 1024 * 1024,
        timeoutMs: this.#deadlineMs,
        accept: () => true,
      })
    } catch (err) {
      if (err instanceof HttpClientError) {
        throw new ControlPlaneError(err.code, err.message, err.statusCode, { cause: err })
      }
      throw new ControlPlaneError('network', (err as Error).message, undefined, { cause: err })
    }
    this.#noteClock(res.headers.date, sentAt, Date.now())
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
      throw new ControlPlaneError(code, `${method} ${path}: ${res.status} ${code}: ${message}`, res.status)
    }
    if (json === undefined) throw new ControlPlaneError('bad_response', `${method} ${path}: the body is not JSON`)
    return json
  }
}

/**
 * A node's SIGHUP reload (runMain's `reload`): `reload` re-reads its control-plane credential
 * files (a renewal's deploy hook, `systemctl reload`), and the outcome is logged: the new
 * certificate's expiry, that there was no file to read, or why the previous ones stay in use.
 */
export function credentialReloader(
  logger: Pick<Logger, 'info' | 'error'>,
  reload: () => { validTo?: string; token?: 'changed' | 'unchanged' } | undefined,
): () => Promise<void> {
  return async () => {
    try {
      const reloaded = reload()
      if (reloaded === undefined) {
        logger.info('SIGHUP changes nothing: no control-plane credential files; other settings are read at start')
      } else if (reloaded.validTo !== undefined) {
        logger.info({ valid_to: reloaded.validTo }, 'control-plane credentials reloaded')
      } else if (reloaded.token === 'changed') {
        logger.info('control-plane token reloaded: the next sync uses the new one')
      } else if (reloaded.token === 'unchanged') {
        logger.info('control-plane token unchanged (its source holds the token in use)')
      } else {
        // A bearer token with a CA file, and no new token read: only the CA is a file.
        logger.info('control-plane CA reloaded; the bearer token is read at start only (restart to change it)')
      }
    } catch (err) {
      logger.error(
        { reason: (err as Error).message },
        'control-plane credentials not reloaded; the previous ones stay in use',
      )
    }
  }
}

/** Past this, a node's clock is reported as off (the evidence correlation allows 5 minutes). */
export const CLOCK_OFFSET_WARN_MS = 30_000

/**
 * Watch a node's clock against the control plane's (`ControlPlaneClient.clockOffsetMs`): one
 * warning when they differ by more than 30 s, one line when they agree again (within 10 s).
 * A node's clock dates its sightings and signals, and decides when an expiring block ends.
 */
export function clockOffsetWarner(logger: Pick<Logger, 'info' | 'warn'>): (offsetMs: number | undefined) => void {
  let off = false
  return (offsetMs) => {
    if (offsetMs === undefined) return
    const seconds = Math.round(offsetMs / 1000)
    if (!off && Math.abs(offsetMs) > CLOCK_OFFSET_WARN_MS) {
      off = true
      logger.warn(
        { clock_offset_seconds: seconds },
        `this host's clock is ${Math.abs(seconds)} s ${seconds > 0 ? 'behind' : 'ahead of'} the control plane's: sightings and signals are misdated and expiring blocks end at the wrong time; synchronise it (NTP)`,
      )
    } else if (off && Math.abs(offsetMs) <= 10_000) {
      off = false
      logger.info({ clock_offset_seconds: seconds }, "this host's clock agrees with the control plane's again")
    }
  }
}
