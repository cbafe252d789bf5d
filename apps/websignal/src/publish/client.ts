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

export class SignalClient {
  readonly #client: ControlPlaneClient

  readonly #onClock: ((offsetMs: number | undefined) => void) | undefined

  /** `onClock` gets the control plane's clock offset after each batch (`ControlPlaneClient.clockOffsetMs`). */
  constructor(cp: ControlPlane, onClock?: (offsetMs: number | undefined) => void) {
    this.#client = new ControlPlaneClient(cp, { connectTimeoutMs: 5_000, requestTimeoutMs: 15_000, deadlineMs: 15_000 })
    this.#onClock = onClock
  }

  async send(signals: Signal[], epoch: number): Promise<SignalBatchResult> {
    try {
      return await this.#client.sendSignals(signals, epoch)
    } finally {
      this.#onClock?.(this.#client.clockOffsetMs)
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

  /** The kit client's `reloadCredentials`; undefined when no credential file is configured. */
  reloadCredentials(): { validTo?: string } | undefined {
    return this.#client.hasCredentialFiles ? this.#client.reloadCredentials() : undefined
  }

  close(): Promise<void> {
    return this.#client.close()
  }
}
