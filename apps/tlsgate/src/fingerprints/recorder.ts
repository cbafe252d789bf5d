/**
 * The TLS gate's connections, gathered by the kit's `GateRecorder` (one transaction per flush,
 * the entry cap enforced in it) with this gate's own fields: the latest connection's SNI, JA3
 * and JA4 as metadata, and how many connections were refused for their verdict.
 */
import { GateRecorder } from '@gatehouse/kit/gate-recorder.ts'
import type { Logger } from '@gatehouse/kit/logger.ts'
import type { AppMetrics } from '@gatehouse/kit/metrics.ts'
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
  /** Where the kit's recorder counts writes and what is held (`GateRecorderOptions.metrics`). */
  metrics?: AppMetrics
}

export class ObservationRecorder extends GateRecorder<Seen, Observation> {
  constructor(options: RecorderOptions) {
    super({
      ...options,
      sighting: (seen) => ({ ip: seen.ip, port: seen.port, last_seen: seen.at }),
      start: (seen) => ({ metadata: JSON.stringify(seen.metadata), refused: seen.refused ? 1 : 0 }),
      fold: (o, seen, latest) => {
        if (seen.refused) o.refused++
        // The SNI may differ between connections of one client: the latest is kept.
        if (latest) o.metadata = JSON.stringify(seen.metadata)
      },
      merge: (o, kept) => {
        o.refused += kept.refused
      },
      write: (batch, now) => recordObservations(options.db, batch, options.maxEntries, now),
    })
  }
}
