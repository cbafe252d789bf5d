/**
 * The publisher: exactly one instance per namespace holds the lease and sends the outbox.
 *
 * Each round: acquire (or renew) the lease; if held, send the oldest batch with the lease's
 * fencing epoch and acknowledge it on success. A failure backs off exponentially (1 s to
 * 60 s). A 409 stale_publisher_epoch means a newer publisher exists: this instance drops
 * the lease it thought it had. The local view of the lease expires `ttl/3` before the
 * store's, and store calls time out quickly, so a stalled store cannot leave two
 * publishers believing they own it; the epoch check at the control plane fences the rest.
 *
 * A lease holder with nothing to send sends an empty batch every 2 minutes: the control plane
 * then knows this node is alive (it reports a node unheard for 10 minutes as silent; without
 * it, a quiet site and a dead agent looked the same) and the clock-offset check stays current.
 */
import type { Logger, Signal } from '@gatehouse/kit'
import { RepeatedFailure } from '@gatehouse/kit/repeated-failure.ts'
import type { ControlPlane } from '../config.ts'
import type { Outbox, Store } from '../store/store.ts'
import { PublishError, type SignalClient } from './client.ts'

export interface PublisherMetrics {
  owner(v: 0 | 1): void
  leaseFailure(): void
  publishFailure(): void
  published(n: number): void
}

export interface PublisherOptions {
  store: Store
  client: SignalClient
  cp: ControlPlane
  /**
   * This process's name in the lease: its `agent_id` and a token of its own, so two agents
   * given the same `agent_id` (or one restarted before its old lease expired) never share it.
   */
  owner: string
  metrics: PublisherMetrics
  now?: () => number
  logger?: Pick<Logger, 'info' | 'warn' | 'error'>
  /**
   * A batch was refused for its credentials (401, 403): read them again. True when new ones
   * are in use, which the next round tries at once.
   */
  credentialsRefused?: () => boolean
}

/** Why batches do not reach the control plane, in the words an operator acts on. */
export function publishFailureCause(err: unknown, cp: Pick<ControlPlane, 'instanceId' | 'auth'>): string {
  if (isRefusedCredentials(err)) {
    const refused = `the control plane refused this node's credentials (${err.status} ${err.code})`
    return cp.auth.kind === 'token'
      ? `${refused}: issue a new token with \`edgegate node rotate-token ${cp.instanceId}\` and put it in the token file (read again after each refusal, and on SIGHUP)`
      : `${refused}: check the client certificate with \`websignal doctor\` (expired, or not issued for node ${cp.instanceId}); renew it, then send SIGHUP`
  }
  return (err as Error).message
}

function isRefusedCredentials(err: unknown): err is PublishError {
  return err instanceof PublishError && (err.status === 401 || err.status === 403)
}

/** With nothing to send, an empty batch this often (the control plane's silence threshold is 10 minutes). */
export const HEARTBEAT_MS = 120_000
const MIN_BACKOFF = 1_000
const MAX_BACKOFF = 60_000
/** How long an acknowledged id is remembered, so a re-trigger in the same window is not queued again. */
export const SENT_MEMORY_MS = 48 * 3600_000

export class Publisher {
  readonly #o: PublisherOptions
  readonly #outbox: Outbox
  #epoch = 0
  #validUntil = 0
  #backoffUntil = 0
  #backoff = MIN_BACKOFF
  #timer: NodeJS.Timeout | undefined
  #running: Promise<void> | undefined
  #stopped = false
  /** When a batch (or a heartbeat) was last accepted; from start, so the first heartbeat waits too. */
  #lastSentAt: number
  /** Since when batches have not reached the control plane, and why; undefined while they do. */
  #failing: { since: number; cause: string } | undefined
  readonly #failures: RepeatedFailure | undefined

  constructor(o: PublisherOptions) {
    this.#o = o
    this.#outbox = o.store.outbox('signals')
    this.#lastSentAt = this.#now()
    this.#failures =
      o.logger &&
      new RepeatedFailure(o.logger as Logger, {
        failed: 'signals cannot be published: they wait in the outbox and are sent once the control plane takes them',
        recovered: 'signals are published again',
        level: 'warn',
      })
  }

  /** Since when (ms) the lease holder's batches have failed, and why; undefined while they succeed. */
  get failing(): { since: number; cause: string } | undefined {
    return this.#failing
  }

  /** The epoch of the lease this instance holds, or 0. */
  get epoch(): number {
    return this.#now() < this.#validUntil ? this.#epoch : 0
  }

  #now(): number {
    return (this.#o.now ?? Date.now)()
  }

  start(): void {
    const loop = () => {
      if (this.#stopped) return
      this.#running = this.round().finally(() => {
        if (!this.#stopped) this.#timer = setTimeout(loop, this.#o.cp.publishIntervalMs)
      })
    }
    loop()
  }

  /** One round: lease, then at most one batch. Exposed for tests. */
  async round(): Promise<void> {
    const { store, cp, owner, metrics } = this.#o
    const asked = this.#now()
    try {
      // Renew while we hold it (owner- and epoch-checked); otherwise try to acquire.
      const renewed = this.#epoch > 0 && (await store.renew(owner, this.#epoch, cp.leaseTtlMs))
      const epoch = renewed ? this.#epoch : await store.acquire(owner, cp.leaseTtlMs)
      if (epoch > 0) {
        if (epoch !== this.#epoch) this.#o.logger?.info({ epoch }, 'publisher lease acquired')
        this.#epoch = epoch
        this.#validUntil = asked + Math.floor((cp.leaseTtlMs * 2) / 3)
      } else this.#validUntil = 0
    } catch {
      metrics.leaseFailure()
      this.#validUntil = 0
    }
    metrics.owner(this.epoch > 0 ? 1 : 0)
    if (this.epoch === 0 || this.#now() < this.#backoffUntil) return
    let batch: Array<{ id: string; payload: Signal }>
    try {
      batch = await this.#outbox.peek<Signal>(cp.batchSize)
    } catch {
      metrics.leaseFailure()
      return
    }
    if (batch.length === 0 && this.#now() - this.#lastSentAt < HEARTBEAT_MS) return
    // Re-check after the read: the lease must still be ours (locally) when the request leaves.
    const epoch = this.epoch
    if (epoch === 0) return
    try {
      await this.#o.client.send(
        batch.map((b) => b.payload),
        epoch,
      )
    } catch (err) {
      metrics.publishFailure()
      if (err instanceof PublishError && err.code === 'stale_publisher_epoch') {
        this.#o.logger?.info({ epoch }, 'control plane refused a stale publisher epoch: giving up the lease')
        await store.release(owner, epoch).catch(() => {})
        this.#validUntil = 0
        metrics.owner(0)
        return
      }
      this.#backoffUntil = this.#now() + this.#backoff
      this.#backoff = Math.min(this.#backoff * 2, MAX_BACKOFF)
      const cause = publishFailureCause(err, cp)
      this.#failing = { since: this.#failing?.since ?? this.#now(), cause }
      const retry = isRefusedCredentials(err) && this.#o.credentialsRefused?.() === true
      if (retry) this.retryNow()
      this.#failures?.failed({
        cause,
        code: err instanceof PublishError ? err.code : 'error',
        retry_in_ms: this.#backoffUntil - this.#now(),
      })
      return
    }
    this.#failing = undefined
    this.#failures?.succeeded()
    this.#backoff = MIN_BACKOFF
    this.#lastSentAt = this.#now()
    if (batch.length === 0) return
    metrics.published(batch.length)
    try {
      await this.#outbox.ack(
        batch.map((b) => b.id),
        this.#now(),
        SENT_MEMORY_MS,
      )
    } catch {
      // Not acknowledged: the batch is sent again; the control plane deduplicates by event id.
      metrics.leaseFailure()
    }
  }

  /** Credentials were replaced: the next round sends without waiting out the backoff. */
  retryNow(): void {
    this.#backoffUntil = 0
    this.#backoff = MIN_BACKOFF
  }

  /** Stop after the round in flight and release the lease so another instance takes over at once. */
  async stop(): Promise<void> {
    this.#stopped = true
    clearTimeout(this.#timer)
    await this.#running
    if (this.#epoch > 0) await this.#o.store.release(this.#o.owner, this.#epoch).catch(() => {})
    this.#validUntil = 0
    this.#o.metrics.owner(0)
  }
}
