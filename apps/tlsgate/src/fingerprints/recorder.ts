/**
 * Gathers connections in memory and writes them in one transaction per flush, so a flood of
 * clients costs one SQLite write per interval instead of one per connection. The entry cap is
 * enforced in that same transaction.
 */
import { mergeSightings } from '@gatehouse/kit/gate-store.ts'
import type { Logger } from '@gatehouse/kit/logger.ts'
import type { Kysely } from 'kysely'
import type { DB } from '../db/schema.ts'
import { type Observation, recordObservations } from './store.ts'

export interface Seen {
  fingerprint: string
  metadata: { sni: string; ja3: string; ja4: string; ja4_r: string }
  ip: string
  port: number
  at: string
  /** Refused because of its verdict. */
  refused: boolean
}

export interface RecorderOptions {
  db: Kysely<DB>
  logger: Logger
  maxEntries: number
  /** Flush at least this often (ms). */
  intervalMs: number
  /** Flush early once this many distinct fingerprints wait. */
  maxPending?: number
}

export class ObservationRecorder {
  readonly #options: RecorderOptions
  #pending = new Map<string, Observation>()
  #timer: NodeJS.Timeout
  #flushing: Promise<void> = Promise.resolve()

  constructor(options: RecorderOptions) {
    this.#options = options
    this.#timer = setInterval(() => void this.flush(), options.intervalMs)
    this.#timer.unref()
  }

  add(seen: Seen): void {
    const sighting = { ip: seen.ip, port: seen.port, last_seen: seen.at }
    const o = this.#pending.get(seen.fingerprint)
    if (!o) {
      this.#pending.set(seen.fingerprint, {
        fingerprint: seen.fingerprint,
        metadata: JSON.stringify(seen.metadata),
        count: 1,
        refused: seen.refused ? 1 : 0,
        firstSeen: seen.at,
        lastSeen: seen.at,
        sightings: [sighting],
      })
      if (this.#pending.size >= (this.#options.maxPending ?? 512)) void this.flush()
      return
    }
    o.count++
    if (seen.refused) o.refused++
    if (seen.at > o.lastSeen) {
      o.lastSeen = seen.at
      o.metadata = JSON.stringify(seen.metadata)
    }
    // Keep the pending list bounded the same way the stored one is.
    o.sightings.push(sighting)
    if (o.sightings.length > 256) o.sightings = mergeSightings(o.sightings, [])
  }

  /** Write what is pending; concurrent calls run one after another. */
  flush(): Promise<void> {
    this.#flushing = this.#flushing.then(async () => {
      if (this.#pending.size === 0) return
      const batch = [...this.#pending.values()]
      this.#pending = new Map()
      try {
        const now = new Date().toISOString()
        const { pruned } = await recordObservations(this.#options.db, batch, this.#options.maxEntries, now)
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
