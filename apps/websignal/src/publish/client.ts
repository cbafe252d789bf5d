/**
 * POST /v1/signals/batch?instance_id= to the control plane through the kit's control-plane
 * client (HTTPS only, redirects refused, a bearer token or a client certificate; shared with
 * the gates), the publisher's fencing epoch in the body.
 */
import { ControlPlaneClient, ControlPlaneError } from '@gatehouse/kit/control-plane-client.ts'
import type { Signal, SignalBatchResult } from '@gatehouse/kit/edge-wire.ts'
import type { ControlPlane } from '../config.ts'

/** `stale_publisher_epoch`, `redirect_refused`, `network`, `bad_status`, or the server's code. */
export { ControlPlaneError as PublishError }

const TIMEOUTS = { connectTimeoutMs: 5_000, requestTimeoutMs: 15_000, deadlineMs: 15_000 }

export class SignalClient {
  /** The target in use: the config's, with the token of the last reload. */
  #cp: ControlPlane
  /** The kit client carries its bearer token for life: a new token is a new client. */
  #client: ControlPlaneClient
  /** Requests in flight per client, so a replaced one is closed only once its last answer came. */
  readonly #inFlight = new Map<ControlPlaneClient, number>()
  /** Replaced clients still answering a request. */
  readonly #retired = new Set<ControlPlaneClient>()

  readonly #onClock: ((offsetMs: number | undefined) => void) | undefined

  /** `onClock` gets the control plane's clock offset after each batch (`ControlPlaneClient.clockOffsetMs`). */
  constructor(cp: ControlPlane, onClock?: (offsetMs: number | undefined) => void) {
    this.#cp = cp
    this.#client = new ControlPlaneClient(cp, TIMEOUTS)
    this.#onClock = onClock
  }

  async send(signals: Signal[], epoch: number): Promise<SignalBatchResult> {
    const client = this.#client
    this.#inFlight.set(client, (this.#inFlight.get(client) ?? 0) + 1)
    try {
      return await client.sendSignals(signals, epoch)
    } finally {
      this.#onClock?.(client.clockOffsetMs)
      const left = this.#inFlight.get(client)! - 1
      if (left > 0) this.#inFlight.set(client, left)
      else {
        this.#inFlight.delete(client)
        if (this.#retired.delete(client)) void client.close()
      }
    }
  }

  /** When the client certificate in use expires (ms since the epoch); undefined with a token. */
  get clientCertificateExpiresAt(): number | undefined {
    return this.#client.clientCertificateExpiresAt
  }

  /** The first certificate of `control_plane.ca` to expire; undefined without a `ca`. */
  get caExpiry(): { at: number; subject: string } | undefined {
    return this.#client.caExpiry
  }

  /** Whether the client certificate, key or CA come from files (what `reloadCredentials` re-reads). */
  get hasCredentialFiles(): boolean {
    return this.#client.hasCredentialFiles
  }

  /**
   * Read the client certificate, key and CA files again and, with a bearer token, use `token`
   * from the next request on. All or nothing: a file that cannot be read, or a key that does not
   * match its certificate, throws and changes nothing. Requests in flight finish as they began.
   */
  reloadCredentials(token?: string): { validTo?: string } {
    const auth = this.#cp.auth
    if (token === undefined || auth.kind !== 'token' || token === auth.token) {
      return this.#client.hasCredentialFiles ? this.#client.reloadCredentials() : {}
    }
    const cp = { ...this.#cp, auth: { ...auth, token } }
    const next = new ControlPlaneClient(cp, TIMEOUTS)
    try {
      // The constructor reads the CA without checking it; this checks it as a renewal is.
      if (next.hasCredentialFiles) next.reloadCredentials()
    } catch (err) {
      void next.close()
      throw err
    }
    const old = this.#client
    this.#client = next
    this.#cp = cp
    if (this.#inFlight.has(old)) this.#retired.add(old)
    else void old.close()
    return {}
  }

  /** The token in use (undefined with a client certificate). */
  get token(): string | undefined {
    return this.#cp.auth.kind === 'token' ? this.#cp.auth.token : undefined
  }

  async close(): Promise<void> {
    await Promise.all([this.#client, ...this.#retired].map((c) => c.close()))
    this.#retired.clear()
  }
}
