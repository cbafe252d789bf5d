/**
 * The running agent: tail every input, fold lines in memory, flush each key once per tick
 * to the shared store, detect, queue signals in the store-backed outbox, and (on the one
 * lease holder) publish. Read positions are saved only after the tick's flush succeeded.
 */

import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { hostname } from 'node:os'
import type { Logger } from '@gatehouse/kit'
import { type CertificateExpiryWatch, watchCertificateExpiry } from '@gatehouse/kit/certificate-expiry.ts'
import { clockOffsetWarner } from '@gatehouse/kit/control-plane-client.ts'
import { RepeatedFailure } from '@gatehouse/kit/repeated-failure.ts'
import { AnalyticsCollector, type HourCounts, VisitorKeys } from './analytics/collector.ts'
import { AnalyticsSender, closeHours, flushAnalytics } from './analytics/roll.ts'
import type { Config } from './config.ts'
import { buildSignal, isScanner } from './detect/detect.ts'
import { BUILTIN_PATTERN_DIR, compilePatterns, loadPatternLists } from './detect/patterns.ts'
import { WindowAggregator } from './detect/window.ts'
import type { Metrics } from './metrics.ts'
import { InputPipeline } from './pipeline.ts'
import { SignalClient } from './publish/client.ts'
import { CredentialReload } from './publish/credentials.ts'
import { Publisher } from './publish/publisher.ts'
import type { Outbox, Store } from './store/store.ts'
import { OffsetFile } from './tail/offsets.ts'
import { Tailer, type TailPosition } from './tail/tailer.ts'

export interface AgentDeps {
  config: Config
  store: Store
  metrics: Metrics
  logger: Logger
  now?: () => number
}

interface Input {
  pipeline: InputPipeline
  tailer: Tailer
  position: TailPosition | undefined
}

export interface Readiness {
  ready: boolean
  failing: Record<string, string>
  /** Present while this instance holds the lease and its batches do not reach the control plane. */
  publishing?: { failing_since: string; cause: string }
}

export class Agent {
  readonly #d: AgentDeps
  /**
   * This process's name in the publisher lease: `agent_id/` and a token of its own. Two agents
   * given one `agent_id` must not both believe they hold it, nor a restarted agent reuse the
   * lease (and fencing epoch) its previous process left behind.
   */
  readonly #leaseOwner: string
  readonly #agg: WindowAggregator
  readonly #inputs: Input[]
  readonly #offsets: OffsetFile
  readonly #outbox: Outbox
  readonly publisher: Publisher | undefined
  readonly #client: SignalClient | undefined
  readonly #certificateExpiry: CertificateExpiryWatch[] = []
  readonly #credentials: CredentialReload
  readonly #analytics: AnalyticsCollector | undefined
  readonly #analyticsSender: AnalyticsSender | undefined
  #analyticsRetry: HourCounts[] = []
  #analyticsRunning = false
  #analyticsEpoch = 0
  #storeOk = false
  /** The last ping failed: the store is down or cut off. */
  #unreachable = false
  /** Why the store refuses the counts while it answers (a read-only replica, out of memory). */
  #refusal: string | undefined
  /** Flushes fail every tick while the store refuses them: logged once a minute. */
  readonly #flushFailures: RepeatedFailure
  #timers: NodeJS.Timeout[] = []
  #polling = false
  #flushing: Promise<void> | undefined
  #stopped = false
  /** Since when read positions could not be saved (a full or failing state disk), if they cannot. */
  #unsavedSince: number | undefined

  constructor(d: AgentDeps) {
    this.#d = d
    this.#leaseOwner = `${d.config.agentId}/${randomBytes(6).toString('hex')}`
    this.#flushFailures = new RepeatedFailure(d.logger, {
      failed: 'storing the counts failed: what was read is kept and stored once the store takes it',
      recovered: 'the store takes the counts again',
      level: 'warn',
    })
    const c = d.config
    const lists = loadPatternLists([BUILTIN_PATTERN_DIR, ...c.patternDirs], c.disabledLists)
    this.#agg = new WindowAggregator(c.windowMs, compilePatterns(lists))
    this.#offsets = new OffsetFile(c.stateDir)
    const saved = this.#offsets.load()
    const m = d.metrics
    const counters = {
      parsed: (n: number) => m.parsed.inc(n),
      unmatched: (reason: string, n = 1) => m.unmatched.inc({ reason }, n),
      observed: (ms: number) => {
        const s = ms / 1000
        if (s > (this.#lastObservation ?? 0)) {
          this.#lastObservation = s
          m.lastObservation.set(s)
        }
      },
    }
    const fallbackHost = hostname().toLowerCase()
    const an = c.analytics
    if (an) {
      this.#analytics = new AnalyticsCollector(new VisitorKeys(an.secret, an.pipelineId))
      if (!c.shadow) {
        const out = an.output
        this.#analyticsSender = new AnalyticsSender(
          d.store,
          out.kind === 'file'
            ? out
            : { kind: 'https', url: out.url, token: out.token, ...(out.ca ? { ca: readFileSync(out.ca) } : {}) },
        )
      }
    }
    this.#inputs = c.inputs.map((input) => {
      const pipeline = new InputPipeline(input, this.#agg, counters, fallbackHost, this.#analytics)
      const entry: Input = { pipeline, tailer: undefined as never, position: saved[input.path] }
      entry.tailer = new Tailer(
        {
          path: input.path,
          start: saved[input.path],
          maxLineBytes: 16 * 1024,
          ...(d.now ? { now: d.now } : {}),
        },
        {
          lines: (lines, pos) => {
            pipeline.lines(lines, this.#now())
            entry.position = pos
          },
          tooLong: () => m.unmatched.inc({ reason: 'too_long' }),
          restart: (reason) => {
            m.tailRestarts.inc({ reason })
            d.logger.info({ input: input.path, reason }, 'input switched files')
          },
          lost: (file) => {
            d.logger.warn(
              { input: input.path, file: file.path ?? '(deleted)', offset: file.offset, reason: file.reason },
              file.reason === 'gone'
                ? 'a rotated log file read before the restart is gone: the lines written to it past the saved position are not counted'
                : 'a rotated log file read before the restart was replaced by another: the lines written to it past the saved position are not counted',
            )
          },
        },
      )
      return entry
    })
    this.#outbox = d.store.outbox('signals')
    if (c.controlPlane && !c.shadow) {
      const warnClock = clockOffsetWarner(d.logger)
      this.#client = new SignalClient(c.controlPlane, (offsetMs) => {
        warnClock(offsetMs)
        if (offsetMs !== undefined) m.clockOffset.set(Math.round(offsetMs) / 1000)
      })
      this.publisher = new Publisher({
        credentialsRefused: () => this.#credentials.refused(),
        store: d.store,
        client: this.#client,
        cp: c.controlPlane,
        owner: this.#leaseOwner,
        metrics: {
          owner: (v) => m.publisherOwner.set(v),
          leaseFailure: () => m.leaseFailures.inc(),
          publishFailure: () => m.signalPublishFailures.inc(),
          published: (n) => m.published.inc(n),
        },
        logger: d.logger,
      })
      const { auth } = c.controlPlane
      const client = this.#client
      if (auth.kind === 'mtls') {
        this.#certificateExpiry.push(
          watchCertificateExpiry({
            metrics: m.registry,
            logger: d.logger,
            use: 'client',
            file: auth.clientCert,
            expiresAt: () => client.clientCertificateExpiresAt,
          }),
        )
      }
      if (auth.ca !== undefined) {
        this.#certificateExpiry.push(
          watchCertificateExpiry({
            metrics: m.registry,
            logger: d.logger,
            use: 'ca',
            file: auth.ca,
            expiresAt: () => client.caExpiry?.at,
            subject: () => client.caExpiry?.subject,
          }),
        )
      }
    }
    this.#credentials = new CredentialReload({
      client: this.#client,
      cp: c.controlPlane,
      logger: d.logger,
      reloaded: () => {
        this.publisher?.retryNow()
        for (const w of this.#certificateExpiry) w.check()
      },
    })
    m.publisherOwner.set(0)
  }

  #lastObservation: number | undefined

  #now(): number {
    return (this.#d.now ?? Date.now)()
  }

  /**
   * Readiness: store connected and every input started (a missing file is waited for, not a
   * failure). Publishing is not part of it (the spec's readiness; signals wait in the outbox),
   * but a lease holder whose batches fail says since when and why, for `websignal status`.
   */
  readiness(): Readiness {
    const failing: Record<string, string> = {}
    if (!this.#storeOk)
      failing.store =
        this.#unreachable || this.#refusal === undefined
          ? 'the store is unreachable'
          : `the store does not take writes (${this.#refusal})`
    for (const i of this.#inputs) {
      if (!i.tailer.started) failing[`input ${i.pipeline.input.site}`] = `cannot read the log (${i.tailer.error})`
    }
    const ready = Object.keys(failing).length === 0
    this.#d.metrics.ready.set(ready ? 1 : 0)
    const f = this.publisher?.epoch ? this.publisher.failing : undefined
    return f
      ? { ready, failing, publishing: { failing_since: new Date(f.since).toISOString(), cause: f.cause } }
      : { ready, failing }
  }

  /** Start polling, flushing and publishing. The store was opened by the caller. */
  async start(): Promise<void> {
    this.#storeOk = true
    await this.pollOnce()
    const c = this.#d.config
    this.#timers.push(setInterval(() => void this.pollOnce(), c.pollIntervalMs))
    this.#timers.push(setInterval(() => void this.flush(), c.flushIntervalMs))
    this.#timers.push(setInterval(() => void this.#health(), Math.max(c.flushIntervalMs, 1000)))
    if (this.#analyticsSender) {
      this.#timers.push(setInterval(() => void this.analyticsRound(), c.controlPlane?.publishIntervalMs ?? 1000))
    }
    this.publisher?.start()
    this.readiness()
  }

  async pollOnce(): Promise<void> {
    if (this.#polling) return
    this.#polling = true
    try {
      for (const i of this.#inputs) await i.tailer.poll()
    } finally {
      this.#polling = false
    }
  }

  async #health(): Promise<void> {
    let answered = false
    try {
      await this.#d.store.ping()
      answered = true
      if (this.#unreachable) this.#d.logger.info('store reachable again')
      this.#unreachable = false
      // A store that restarted without persistence lost its schema key: set (or check) it again.
      if (!this.#storeOk) await this.#d.store.checkSchema()
      this.#storeOk = true
    } catch {
      // One line per outage; a store that answers but refuses the schema check (a read-only
      // replica) is told by the flush's own line.
      if (!answered && !this.#unreachable) this.#d.logger.warn('store unreachable: not ready until it answers')
      this.#unreachable ||= !answered
      this.#storeOk = false
    }
    try {
      if (!this.#d.config.shadow) this.#d.metrics.signalOutbox.set(await this.#outbox.depth())
    } catch {
      // The ping above reports store trouble.
    }
    this.readiness()
  }

  /** One tick: flush every key, detect, queue; then save read positions. */
  flush(): Promise<void> {
    this.#flushing ??= this.#flush().finally(() => {
      this.#flushing = undefined
    })
    return this.#flushing
  }

  async #flush(): Promise<void> {
    const positions = Object.fromEntries(
      this.#inputs.filter((i) => i.position).map((i) => [i.pipeline.input.path, { ...i.position! }]),
    )
    const analyticsOk = await this.#flushAnalytics()
    const batch = this.#agg.drain()
    if (batch.length === 0) {
      if (!analyticsOk) return
      this.#savePositions(positions)
      return
    }
    const c = this.#d.config
    const m = this.#d.metrics
    const ttl = c.windowMs * 2
    const flushed = await this.#d.store.flush(batch, ttl, c.thresholds)
    // Retried next tick. A call that timed out after Redis ran it counts twice:
    // at-least-once counting, documented.
    const failed = flushed.failed
    if (flushed.failedCalls > 0) {
      m.storeFailures.inc(flushed.failedCalls)
      this.#flushFailures.failed(flushed.error)
      this.#refusal = flushed.error instanceof Error ? flushed.error.message : String(flushed.error)
    }
    await Promise.all(
      flushed.candidates.map(async ({ aggregate: a, totals: t }) => {
        // The store applied the same rule; this keeps the decision in one readable place.
        if (!isScanner(t, c.thresholds)) return
        try {
          const signal = buildSignal(a, t, a.lastSeenMs, c.windowMs)
          if (c.shadow) m.detected.inc({ mode: 'shadow' })
          else {
            const r = await this.#outbox.add(signal.event_id, signal, c.controlPlane?.outboxMax ?? 100_000, this.#now())
            if (r.dropped) m.dropped.inc(r.dropped)
            if (r.added) m.detected.inc({ mode: 'publish' })
          }
          await this.#d.store.markSignalled(a)
        } catch {
          // The counts are in the store; an empty copy re-evaluates the window next tick.
          failed.push({ ...a, requests: 0, errors: 0, successes: 0, nonStatic: 0, suspicious: 0, paths: new Set() })
          m.storeFailures.inc()
        }
      }),
    )
    if (failed.length > 0 || !analyticsOk) {
      // Retried next tick, merged with what arrives meanwhile.
      this.#agg.restore(failed)
      this.#storeOk = false
      this.readiness()
      return
    }
    this.#flushFailures.succeeded()
    this.#refusal = undefined
    this.#savePositions(positions)
  }

  /**
   * Save read positions; a state disk that cannot take them (full, failing) must not stop the
   * agent: what was read is in the store, and a restart meanwhile counts the lines since the
   * last saved positions again (at-least-once, as after a crash). Logged once per outage.
   */
  #savePositions(positions: Record<string, TailPosition>): void {
    try {
      this.#offsets.save(positions)
    } catch (err) {
      if (this.#unsavedSince === undefined) {
        this.#unsavedSince = this.#now()
        this.#d.logger.error(
          { path: this.#offsets.path, reason: (err as Error).message },
          'read positions cannot be saved; reading goes on, and a restart counts the lines since the last saved positions again',
        )
      }
      return
    }
    if (this.#unsavedSince !== undefined) {
      this.#d.logger.info({ outageMs: this.#now() - this.#unsavedSince }, 'read positions saved again')
      this.#unsavedSince = undefined
    }
  }

  async #flushAnalytics(): Promise<boolean> {
    if (!this.#analytics) return true
    const hours = [...this.#analyticsRetry, ...this.#analytics.drain()]
    this.#analyticsRetry = []
    if (hours.length === 0) return true
    try {
      await flushAnalytics(this.#d.store, this.#d.config.store.namespace, hours)
      return true
    } catch {
      this.#analyticsRetry = hours
      this.#d.metrics.storeFailures.inc()
      return false
    }
  }

  /**
   * The analytics roll, on the lease holder only: close finished hours into records and
   * deliver the analytics outbox. Exposed for tests (with the agent's clock).
   */
  async analyticsRound(): Promise<void> {
    const an = this.#d.config.analytics
    if (!an || !this.#analyticsSender || this.#analyticsRunning) return
    this.#analyticsRunning = true
    const m = this.#d.metrics
    try {
      const epoch = await this.#d.store.acquire(this.#leaseOwner, this.#d.config.controlPlane?.leaseTtlMs ?? 10_000)
      this.#analyticsEpoch = epoch
      if (epoch === 0) return
      const now = this.#now()
      await closeHours(this.#d.store, this.#d.config.store.namespace, now, an.graceMs, an.outboxMax)
      try {
        await this.#analyticsSender.send(now)
      } catch (err) {
        m.analyticsPublishFailures.inc()
        this.#d.logger.warn({ err: (err as Error).message }, 'analytics output failed, retrying later')
      }
      m.analyticsOutbox.set(await this.#d.store.outbox('analytics').depth())
    } catch {
      m.storeFailures.inc()
    } finally {
      this.#analyticsRunning = false
    }
  }

  /**
   * SIGHUP: read the control-plane token, client certificate, key and CA again and log the
   * outcome; the next batch uses them. What cannot be read keeps the previous ones (false).
   */
  reloadCredentials(): boolean {
    return this.#credentials.sighup()
  }

  /** Stop tailing, flush what was read, stop publishing (releasing the lease). */
  async stop(): Promise<void> {
    if (this.#stopped) return
    this.#stopped = true
    for (const w of this.#certificateExpiry) w.stop()
    for (const t of this.#timers) clearInterval(t)
    while (this.#polling) await new Promise((r) => setImmediate(r))
    await this.flush().catch(() => {})
    await this.publisher?.stop()
    while (this.#analyticsRunning) await new Promise((r) => setImmediate(r))
    if (!this.publisher && this.#analyticsEpoch > 0) {
      // Without a signal publisher the analytics roll held the lease: hand it over at once.
      await this.#d.store.release(this.#leaseOwner, this.#analyticsEpoch).catch(() => {})
    }
    await this.#client?.close()
    await this.#analyticsSender?.close()
    for (const i of this.#inputs) await i.tailer.close()
  }
}
