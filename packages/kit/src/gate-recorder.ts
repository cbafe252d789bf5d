/**
 * A gate's connections gathered in memory and written in one transaction per flush, so a flood
 * of clients costs one SQLite write per interval instead of one per connection (the entry cap is
 * enforced in that same transaction, by `recordObservations`). Both gates use it: this keeps the
 * counts, times and bounded sightings every gate records, and the gate adds its own fields.
 *
 * A write that fails because the database is unavailable (a full disk, a lock held past the busy
 * timeout) loses nothing: its observations go back into the pending ones and are written by a
 * later flush. While writes fail, memory is bounded by `maxHeld` fingerprints; connections of
 * fingerprints beyond it are counted and logged, not kept.
 */
import { isDatabaseUnavailable } from './db/unavailable.ts'
import { type GateObservation, mergeSightings } from './gate-store.ts'
import type { Logger } from './logger.ts'
import type { AppMetrics, Counter } from './metrics.ts'

/** What every gate knows of a connection. */
export interface GateSeen {
  fingerprint: string
  ip: string
  port: number
  /** RFC 3339. */
  at: string
}

export interface GateRecorderOptions<Seen extends GateSeen, O extends GateObservation> {
  logger: Logger
  /** Flush at least this often (ms). */
  intervalMs: number
  /** Flush early once this many distinct fingerprints wait (default 512). */
  maxPending?: number
  /** Fingerprints held in memory at most, while writes fail (default 16 × `maxPending`). */
  maxHeld?: number
  now?: () => string
  /** The sighting stored for a connection (a gate may add fields to it). */
  sighting(seen: Seen): O['sightings'][number]
  /** The gate's own fields, metadata included, of a fingerprint's first connection since the last flush. */
  start(seen: Seen): Omit<O, Exclude<keyof GateObservation, 'metadata'>>
  /** Fold a later connection into the gate's own fields; `latest`: no connection seen so far is newer. */
  fold(o: O, seen: Seen, latest: boolean): void
  /**
   * Fold the gate's own fields of an observation a failed write gave back into the pending one
   * of the same fingerprint; `latest`: the given-back one's last connection is the newer.
   */
  merge(o: O, kept: O, latest: boolean): void
  /** Write a batch in one transaction (the gate's `recordObservations`). */
  write(batch: O[], now: string): Promise<{ pruned: number }>
  /**
   * Where to count writes and what is held unwritten (`<app>_observation_writes_total`,
   * `<app>_observations_unwritten`, `<app>_connections_not_recorded_total`): an outage of the
   * store shows on a dashboard, not only in the log line it gets once.
   */
  metrics?: AppMetrics
}

/** How a write of gathered connections ended. */
const WRITE_RESULTS = ['ok', 'failed', 'dropped'] as const

/** Sightings pending per fingerprint before they are merged down to the stored bound. */
const PENDING_SIGHTINGS = 256

export class GateRecorder<Seen extends GateSeen, O extends GateObservation> {
  readonly #options: GateRecorderOptions<Seen, O>
  readonly #maxPending: number
  readonly #maxHeld: number
  #pending = new Map<string, O>()
  readonly #timer: NodeJS.Timeout
  #flushing: Promise<void> = Promise.resolve()
  /** A flush queued behind the running one, not started yet: later calls join it. */
  #queued: Promise<void> | undefined
  /** Since when writes have failed for an unavailable database (ms), if they do. */
  #failingSince: number | undefined
  /** Connections not recorded because `maxHeld` fingerprints were already held. */
  #dropped = 0
  readonly #writes: Counter<'result'> | undefined
  readonly #notRecorded: Counter | undefined

  constructor(options: GateRecorderOptions<Seen, O>) {
    this.#options = options
    this.#maxPending = options.maxPending ?? 512
    this.#maxHeld = options.maxHeld ?? 16 * this.#maxPending
    this.#timer = setInterval(() => void this.flush(), options.intervalMs)
    this.#timer.unref()
    const { metrics } = options
    if (metrics) {
      this.#writes = metrics.counter(
        'observation_writes_total',
        'Writes of the connections gathered since the last one, by result (ok; failed: the database was unavailable and they are kept; dropped: refused for another reason)',
        ['result'],
      )
      for (const result of WRITE_RESULTS) this.#writes.inc({ result }, 0)
      this.#notRecorded = metrics.counter(
        'connections_not_recorded_total',
        'Connections not recorded: new clients beyond the most entries held in memory while writes failed',
      )
      metrics.gauge(
        'observations_unwritten',
        'Store entries whose connections are gathered and not yet written (above zero for long: writes are failing)',
        [],
        (g) => g.set(this.#pending.size),
      )
    }
  }

  add(seen: Seen): void {
    const o = this.#pending.get(seen.fingerprint)
    if (!o) {
      if (this.#pending.size >= this.#maxHeld) {
        this.#drop(1)
        return
      }
      const first = {
        ...this.#options.start(seen),
        fingerprint: seen.fingerprint,
        count: 1,
        firstSeen: seen.at,
        lastSeen: seen.at,
        sightings: [this.#options.sighting(seen)],
      } as unknown as O
      this.#pending.set(seen.fingerprint, first)
      // While writes fail, the interval alone retries: one attempt per tick, not one per connection.
      if (this.#pending.size >= this.#maxPending && this.#failingSince === undefined) void this.flush()
      return
    }
    o.count++
    const latest = seen.at >= o.lastSeen
    if (latest) o.lastSeen = seen.at
    else if (seen.at < o.firstSeen) o.firstSeen = seen.at
    this.#options.fold(o, seen, latest)
    // Bounded the same way the stored list is, merged once per 128 connections rather than each.
    o.sightings.push(this.#options.sighting(seen))
    if (o.sightings.length > PENDING_SIGHTINGS) o.sightings = mergeSightings(o.sightings, [])
  }

  /**
   * Write what is pending; concurrent calls run one after another. At most one waits behind the
   * running write, and later calls join it: a write waiting out a lock for seconds does not
   * gather a queue of interval ticks.
   */
  flush(): Promise<void> {
    if (this.#queued) return this.#queued
    const queued = this.#flushing.then(() => {
      this.#queued = undefined
      return this.#write()
    })
    this.#queued = queued
    this.#flushing = queued
    return queued
  }

  async close(): Promise<void> {
    clearInterval(this.#timer)
    await this.flush()
    if (this.#pending.size === 0) return
    let connections = 0
    for (const o of this.#pending.values()) connections += o.count
    this.#options.logger.error(
      { fingerprints: this.#pending.size, connections },
      'observations not stored at shutdown: the database is unavailable',
    )
  }

  async #write(): Promise<void> {
    if (this.#pending.size === 0) return
    const batch = [...this.#pending.values()]
    this.#pending = new Map()
    const { logger } = this.#options
    try {
      const now = (this.#options.now ?? (() => new Date().toISOString()))()
      const { pruned } = await this.#options.write(batch, now)
      this.#writes?.inc({ result: 'ok' })
      if (this.#failingSince !== undefined) {
        logger.info(
          { outageMs: Date.now() - this.#failingSince, notRecorded: this.#dropped },
          'storing observations again',
        )
      } else if (this.#dropped > 0) {
        logger.warn({ notRecorded: this.#dropped }, 'connections not recorded: too many fingerprints held')
      }
      this.#failingSince = undefined
      this.#dropped = 0
      if (pruned > 0) logger.info({ pruned }, 'pruned fingerprint entries over max_fingerprints')
    } catch (err) {
      const reason = (err as Error).message
      if (!isDatabaseUnavailable(err)) {
        this.#writes?.inc({ result: 'dropped' })
        // Not the database's state but the batch or the code: writing it again would fail again.
        logger.error({ reason, fingerprints: batch.length }, 'storing observations failed')
        return
      }
      this.#writes?.inc({ result: 'failed' })
      if (this.#failingSince === undefined) {
        this.#failingSince = Date.now()
        logger.error(
          { reason, fingerprints: batch.length },
          'storing observations failed; they are kept and written once the database is available',
        )
      }
      this.#giveBack(batch)
    }
  }

  /** Put a batch a failed write could not store back with what arrived meanwhile. */
  #giveBack(batch: readonly O[]): void {
    for (const kept of batch) {
      const o = this.#pending.get(kept.fingerprint)
      if (!o) {
        if (this.#pending.size >= this.#maxHeld) this.#drop(kept.count)
        else this.#pending.set(kept.fingerprint, kept)
        continue
      }
      o.count += kept.count
      if (kept.firstSeen < o.firstSeen) o.firstSeen = kept.firstSeen
      const latest = kept.lastSeen > o.lastSeen
      if (latest) {
        o.lastSeen = kept.lastSeen
        o.metadata = kept.metadata
      }
      this.#options.merge(o, kept, latest)
      o.sightings = mergeSightings(kept.sightings, o.sightings)
    }
  }

  #drop(connections: number): void {
    if (this.#dropped === 0) {
      this.#options.logger.warn(
        { held: this.#pending.size },
        'fingerprints over the held limit are not recorded until a write succeeds',
      )
    }
    this.#dropped += connections
    this.#notRecorded?.inc(connections)
  }
}
