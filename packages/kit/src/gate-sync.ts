/**
 * A gate's sync with the control plane (spec: "Sync behaviour of the SSH gate"; the TLS gate
 * does the same):
 * every sync_interval (default 30 s, ±20 % jitter) it uploads the entries changed since the
 * last acknowledged upload in pages of 16, then pulls the policy from its cursor until the
 * control plane says there is no more, applying each page atomically through the sink.
 * While the control plane is unreachable the gate keeps serving on its local verdicts and
 * retries with exponential backoff (capped at 5 minutes or the interval, whichever is longer).
 *
 * A policy answer with `resync` (the control plane's database went back in time: a restore, a
 * failover to a copy that had not caught up; or the gate's cursor is older than deleted
 * decisions the control plane no longer keeps) starts a resync: the whole policy is pulled from
 * the beginning, its answer replaces the verdicts pulled earlier, and those it no longer holds
 * go back to undecided; the gate's own verdicts (its CLI) keep last-writer-wins. The mark is
 * stored, so a resync cut short begins again.
 */
import {
  ControlPlaneClient,
  ControlPlaneError,
  type ControlPlaneTarget,
  clockOffsetWarner,
} from './control-plane-client.ts'
import { EDGE_LIMITS } from './edge-limits.ts'
import type { Decision, Observation } from './edge-wire.ts'
import type { Logger } from './logger.ts'

/** The control plane plus how often to sync. */
export interface SyncControlPlane extends ControlPlaneTarget {
  /** Default 30 s. */
  syncIntervalMs?: number
}

export interface SyncSource {
  /** The last acknowledged change sequence (0 when nothing was ever uploaded). */
  acked(): Promise<number>
  /** Up to `limit` observations changed after `afterSeq`, oldest change first, each with its sequence. */
  changedSince(afterSeq: number, limit: number): Promise<Array<{ seq: number; observation: Observation }>>
  /** Persist that every change up to `seq` reached the control plane. */
  ack(seq: number): Promise<void>
}

export interface SyncSink {
  /** The stored policy cursor (undefined before the first pull). */
  cursor(): Promise<string | undefined>
  /**
   * Apply one page of decisions and store `cursor`, in one transaction (all or nothing).
   * Must be idempotent: a decision older than the local one is skipped.
   */
  applyDecisions(decisions: readonly Decision[], cursor: string, authoritative: boolean): Promise<void>
  /** Whether a resync's full pull was begun and not finished (it starts again from the beginning). */
  resyncPending(): Promise<boolean>
  /** Mark a resync as begun (persisted, so a restart mid-way begins it again). */
  startResync(): Promise<void>
  /**
   * End a resync: verdicts pulled earlier that `listed` (every fingerprint of the full answer)
   * does not hold go back to undecided; the gate's own stay. Clears the mark. Returns how many.
   */
  finishResync(listed: ReadonlySet<string>): Promise<number>
  /**
   * Atomically replace the control-plane-managed bypass ranges (static ranges stay). Called
   * after every successful pull: with the response's `trusted_ranges`, or `[]` when the
   * control plane has no discovery configured (it omits the field).
   */
  replaceManagedRanges(cidrs: readonly string[]): Promise<void>
}

export interface SyncOptions {
  controlPlane: SyncControlPlane
  source: SyncSource
  sink: SyncSink
  logger: Logger
  /** Called after every cycle (for metrics). */
  onCycle?: (result: CycleResult) => void
  /** Random source for jitter (tests pass a fixed one). */
  random?: () => number
}

export interface CycleResult {
  ok: boolean
  /** The control plane's clock minus this host's, ms (`ControlPlaneClient.clockOffsetMs`). */
  clockOffsetMs?: number
  uploaded: number
  skipped: number
  decisions: number
  /** Pulled verdicts a resync dropped (the control plane no longer has them). */
  dropped?: number
  error?: ControlPlaneError
}

export interface SyncStatus {
  consecutiveFailures: number
  lastSuccessAt: Date | undefined
  lastError: ControlPlaneError | undefined
  /** Delay before the next scheduled cycle, ms. */
  nextDelayMs: number
}

export interface SyncHandle {
  /** Run one cycle now (waits for a cycle already running first). */
  syncNow(): Promise<CycleResult>
  status(): SyncStatus
  /** Stop scheduling, abort requests in flight, wait for the running cycle. */
  stop(): Promise<void>
  /**
   * Read the client certificate, key and CA files again for the next requests, and take
   * `token`, the bearer token as the config holds it now (the client's `reloadCredentials`);
   * undefined when there is nothing to read (a token given in the environment, without a CA).
   * Throws, changing nothing, when the files are unreadable or do not match.
   */
  reloadCredentials(token?: string): { validTo?: string; token?: 'changed' | 'unchanged' } | undefined
  /** When the client certificate in use expires (ms since the epoch); undefined with a token. */
  clientCertificateExpiresAt(): number | undefined
  /** The first certificate of `control_plane.ca` to expire; undefined without a `ca`. */
  caExpiry(): { at: number; subject: string } | undefined
}

const MAX_BACKOFF_MS = 5 * 60_000
const DEFAULT_INTERVAL_MS = 30_000

/** Delay before the next cycle: the interval with ±20 % jitter, doubled per consecutive failure. */
export function nextDelay(intervalMs: number, failures: number, random: () => number): number {
  const base =
    failures === 0
      ? intervalMs
      : Math.min(intervalMs * 2 ** Math.min(failures - 1, 16), Math.max(intervalMs, MAX_BACKOFF_MS))
  return Math.max(1, Math.round(base * (0.8 + 0.4 * random())))
}

/**
 * Start syncing; the first cycle runs at once. Throws TypeError on a bad control-plane config.
 *
 * @example
 * const sync = startSync({ controlPlane, source, sink, logger })
 * await sync.stop() // before closing the database
 */
export function startSync(options: SyncOptions): SyncHandle {
  const client = new ControlPlaneClient(options.controlPlane)
  const interval = options.controlPlane.syncIntervalMs ?? DEFAULT_INTERVAL_MS
  const random = options.random ?? Math.random
  const log = options.logger
  const warnClock = clockOffsetWarner(log)
  let stopped = false
  let timer: NodeJS.Timeout | undefined
  let running: Promise<CycleResult> | undefined
  const status: SyncStatus = { consecutiveFailures: 0, lastSuccessAt: undefined, lastError: undefined, nextDelayMs: 0 }

  async function upload(result: CycleResult) {
    let acked = await options.source.acked()
    for (;;) {
      const page = await options.source.changedSince(acked, EDGE_LIMITS.pageSize)
      if (page.length === 0 || stopped) return
      const last = Math.max(...page.map((p) => p.seq))
      try {
        await client.uploadObservations(page.map((p) => p.observation))
        result.uploaded += page.length
      } catch (err) {
        // A page the control plane refuses as malformed (400/413) is retried one entry at a
        // time, so one bad entry is logged and skipped instead of stopping every upload.
        if (!(err instanceof ControlPlaneError) || (err.status !== 400 && err.status !== 413)) throw err
        for (const p of page) {
          try {
            await client.uploadObservations([p.observation])
            result.uploaded++
          } catch (one) {
            if (!(one instanceof ControlPlaneError) || (one.status !== 400 && one.status !== 413)) throw one
            result.skipped++
            log.error(
              { fingerprint: p.observation.fingerprint, code: one.code, msg_detail: one.message },
              'control plane refused an observation; skipped',
            )
          }
        }
      }
      await options.source.ack(last)
      acked = last
    }
  }

  async function pull(result: CycleResult) {
    // During a resync every page is read from the beginning and its fingerprints kept, so the
    // verdicts the control plane no longer has can be dropped once the last page is in.
    let listed: Set<string> | undefined = (await options.sink.resyncPending()) ? new Set() : undefined
    let cursor = listed ? undefined : await options.sink.cursor()
    for (;;) {
      const policy = await client.policy(cursor)
      if (policy.resync === true && listed === undefined) {
        if (policy.resync_reason === 'purged')
          log.info(
            { cursor },
            'this gate last pulled before deleted decisions the control plane no longer keeps: pulling every decision again, then dropping the ones it no longer has',
          )
        else
          log.warn(
            { cursor },
            "the control plane has no decisions as late as this gate's (its database was restored or failed over to an older copy): pulling every decision again, then dropping the ones it no longer has",
          )
        await options.sink.startResync()
        listed = new Set()
        cursor = undefined
        continue
      }
      await options.sink.applyDecisions(policy.decisions, policy.cursor, listed !== undefined)
      if (listed) for (const d of policy.decisions) listed.add(d.fingerprint)
      result.decisions += policy.decisions.length
      cursor = policy.cursor
      if (!policy.more || stopped) {
        // Stopped part-way, a resync stays marked and begins again at the next start.
        if (listed && !policy.more) {
          const dropped = await options.sink.finishResync(listed)
          result.dropped = dropped
          log.warn(
            { kept: listed.size, dropped },
            'resync done: the control plane decisions this gate held and the control plane no longer has are undecided again',
          )
        }
        await options.sink.replaceManagedRanges(policy.trusted_ranges ?? [])
        return
      }
    }
  }

  async function cycle(): Promise<CycleResult> {
    const result: CycleResult = { ok: false, uploaded: 0, skipped: 0, decisions: 0 }
    try {
      await upload(result)
      await pull(result)
      result.ok = true
      status.consecutiveFailures = 0
      status.lastSuccessAt = new Date()
      status.lastError = undefined
      if (result.uploaded || result.decisions || result.skipped) {
        log.info(
          { uploaded: result.uploaded, skipped: result.skipped, decisions: result.decisions },
          'control plane sync',
        )
      }
    } catch (err) {
      const e =
        err instanceof ControlPlaneError
          ? err
          : new ControlPlaneError('internal', (err as Error).message, undefined, { cause: err })
      result.error = e
      status.consecutiveFailures++
      status.lastError = e
      if (!stopped) {
        log.warn(
          { code: e.code, status: e.status, failures: status.consecutiveFailures, msg_detail: e.message },
          'control plane sync failed; serving on local verdicts',
        )
      }
    }
    const offset = client.clockOffsetMs
    if (offset !== undefined) result.clockOffsetMs = offset
    warnClock(offset)
    try {
      options.onCycle?.(result)
    } catch (err) {
      log.error({ err }, 'sync onCycle callback failed')
    }
    return result
  }

  function schedule() {
    clearTimeout(timer)
    if (stopped) return
    status.nextDelayMs = nextDelay(interval, status.consecutiveFailures, random)
    timer = setTimeout(() => void run(), status.nextDelayMs)
    timer.unref()
  }

  function run(): Promise<CycleResult> {
    clearTimeout(timer)
    const previous = running ?? Promise.resolve(undefined)
    const next = previous.then(cycle).finally(() => {
      if (running === next) running = undefined
      schedule()
    })
    running = next
    return next
  }

  void run()
  return {
    reloadCredentials: (token) =>
      client.hasCredentialFiles || token !== undefined ? client.reloadCredentials(token) : undefined,
    clientCertificateExpiresAt: () => client.clientCertificateExpiresAt,
    caExpiry: () => client.caExpiry,
    syncNow: () => (stopped ? Promise.reject(new Error('sync is stopped')) : run()),
    status: () => ({ ...status }),
    async stop() {
      stopped = true
      clearTimeout(timer)
      await client.close()
      await running?.catch(() => {})
      clearTimeout(timer)
    },
  }
}
