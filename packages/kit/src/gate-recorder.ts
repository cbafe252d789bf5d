/**
 * A gate's connections gathered in memory and written in one transaction per flush, so a flood
 * of clients costs one SQLite write per interval instead of one per connection (the entry cap is
 * enforced in that same transaction, by `recordObservations`). Both gates use it: this keeps the
 * counts, times and bounded sightings every gate records, and the gate adds its own fields.
 */
import { type GateObservation, mergeSightings } from './gate-store.ts'
import type { Logger } from './logger.ts'

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
  now?: () => string
  /** The sighting stored for a connection (a gate may add fields to it). */
  sighting(seen: Seen): O['sightings'][number]
  /** The gate's own fields, metadata included, of a fingerprint's first connection since the last flush. */
  start(seen: Seen): Omit<O, Exclude<keyof GateObservation, 'metadata'>>
  /** Fold a later connection into the gate's own fields; `latest`: no connection seen so far is newer. */
  fold(o: O, seen: Seen, latest: boolean): void
  /** Write a batch in one transaction (the gate's `recordObservations`). */
  write(batch: O[], now: string): Promise<{ pruned: number }>
}

/** Sightings pending per fingerprint before they are merged down to the stored bound. */
const PENDING_SIGHTINGS = 256

export class GateRecorder<Seen extends GateSeen, O extends GateObservation> {
  readonly #options: GateRecorderOptions<Seen, O>
  #pending = new Map<string, O>()
  readonly #timer: NodeJS.Timeout
  #flushing: Promise<void> = Promise.resolve()

  constructor(options: GateRecorderOptions<Seen, O>) {
    this.#options = options
    this.#timer = setInterval(() => void this.flush(), options.intervalMs)
    this.#timer.unref()
  }

  add(seen: Seen): void {
    const sighting = this.#options.sighting(seen)
    const o = this.#pending.get(seen.fingerprint)
    if (!o) {
      const first = {
        ...this.#options.start(seen),
        fingerprint: seen.fingerprint,
        count: 1,
        firstSeen: seen.at,
        lastSeen: seen.at,
        sightings: [sighting],
      } as unknown as O
      this.#pending.set(seen.fingerprint, first)
      if (this.#pending.size >= (this.#options.maxPending ?? 512)) void this.flush()
      return
    }
    o.count++
    const latest = seen.at >= o.lastSeen
    if (latest) o.lastSeen = seen.at
    this.#options.fold(o, seen, latest)
    // Bounded the same way the stored list is, merged once per 128 connections rather than each.
    o.sightings.push(sighting)
    if (o.sightings.length > PENDING_SIGHTINGS) o.sightings = mergeSightings(o.sightings, [])
  }

  /** Write what is pending; concurrent calls run one after another. */
  flush(): Promise<void> {
    this.#flushing = this.#flushing.then(async () => {
      if (this.#pending.size === 0) return
      const batch = [...this.#pending.values()]
      this.#pending = new Map()
      try {
        const now = (this.#options.now ?? (() => new Date().toISOString()))()
        const { pruned } = await this.#options.write(batch, now)
        if (pruned > 0) this.#options.logger.info({ pruned }, 'pruned fingerprint entries over max_fingerprints')
      } catch (err) {
        this.#options.logger.error(
          { reason: (err as Error).message, fingerprints: batch.length },
          'storing observations failed',
        )
      }
    })
    return this.#flushing
  }

  async close(): Promise<void> {
    clearInterval(this.#timer)
    await this.flush()
  }
}
