/**
 * Gathers observations in memory and writes them in one transaction per flush, so a flood of
 * rejected clients costs one SQLite write per interval instead of one per connection. Entries
 * and the cap are enforced in that same transaction.
 */

import type { Logger } from '@gatehouse/kit'
import { mergeSightings } from '@gatehouse/kit/gate-store.ts'
import type { Kysely } from 'kysely'
import type { DB } from '../db/schema.ts'
import { type Observation, recordObservations } from './store.ts'

export interface Seen {
  fingerprint: string
  identification: string
  clientVersion: string
  /** The KEXINIT lists; encoded as JSON once per fingerprint and flush. */
  kexinit: object
  ip: string
  port: number
  at: string
  relayPort?: number
  relayIp?: string
  /** Let through as unknown under `--allow-unknown`. */
  enrolled: boolean
}

export interface RecorderOptions {
  db: Kysely<DB>
  logger: Logger
  maxEntries: number
  /** Flush at least this often (ms). */
  intervalMs: number
  /** Flush early once this many distinct fingerprints wait. */
  maxPending?: number
  now?: () => string
}

export class ObservationRecorder {
  readonly #options: RecorderOptions
  #pending = new Map<string, Observation>()
  #timer: NodeJS.Timeout
  #flushing: Promise<void> = Promise.resolve()

  constructor(options: RecorderOptions) {
    this.#options = options
    this.#timer = setInterval(() => void this.flush(), options.intervalMs)
  }

  add(seen: Seen): void {
    const sighting = {
      ip: seen.ip,
      port: seen.port,
      last_seen: seen.at,
      ...(seen.relayPort === undefined ? {} : { relay_port: seen.relayPort }),
      ...(seen.relayIp === undefined ? {} : { relay_ip: seen.relayIp }),
    }
    const o = this.#pending.get(seen.fingerprint)
    if (!o) {
      this.#pending.set(seen.fingerprint, {
        fingerprint: seen.fingerprint,
        identification: seen.identification,
        clientVersion: seen.clientVersion,
        metadata: JSON.stringify(seen.kexinit),
        count: 1,
        enrolled: seen.enrolled ? 1 : 0,
        firstSeen: seen.at,
        lastSeen: seen.at,
        sightings: [sighting],
      })
      if (this.#pending.size >= (this.#options.maxPending ?? 512)) void this.flush()
      return
    }
    o.count++
    if (seen.enrolled) o.enrolled++
    o.identification = seen.identification
    o.clientVersion = seen.clientVersion
    if (seen.at > o.lastSeen) o.lastSeen = seen.at
    // Keep the pending list bounded the same way the stored one is.
    o.sightings = o.sightings.length < 256 ? [...o.sightings, sighting] : mergeSightings(o.sightings, [sighting])
  }

  /** Write what is pending; concurrent calls run one after another. */
  flush(): Promise<void> {
    this.#flushing = this.#flushing.then(async () => {
      if (this.#pending.size === 0) return
      const batch = [...this.#pending.values()]
      this.#pending = new Map()
      const now = (this.#options.now ?? (() => new Date().toISOString()))()
      try {
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
