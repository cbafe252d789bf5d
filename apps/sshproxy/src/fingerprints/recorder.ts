/**
 * The SSH gate's observations, gathered by the kit's `GateRecorder` (one transaction per flush,
 * the entry cap enforced in it) with this gate's own fields: the client's identification and
 * version, the KEXINIT lists as metadata, the relay's address in each sighting, and how many
 * connections were let through as unknown.
 */

import type { AppMetrics, Logger } from '@gatehouse/kit'
import { GateRecorder } from '@gatehouse/kit/gate-recorder.ts'
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
  /** Where the kit's recorder counts writes and what is held (`GateRecorderOptions.metrics`). */
  metrics?: AppMetrics
  now?: () => string
}

export class ObservationRecorder extends GateRecorder<Seen, Observation> {
  constructor(options: RecorderOptions) {
    super({
      ...options,
      sighting: (seen) => ({
        ip: seen.ip,
        port: seen.port,
        last_seen: seen.at,
        ...(seen.relayPort === undefined ? {} : { relay_port: seen.relayPort }),
        ...(seen.relayIp === undefined ? {} : { relay_ip: seen.relayIp }),
      }),
      // The metadata is the KEXINIT the fingerprint is made of: the same for every connection.
      start: (seen) => ({
        identification: seen.identification,
        clientVersion: seen.clientVersion,
        metadata: JSON.stringify(seen.kexinit),
        enrolled: seen.enrolled ? 1 : 0,
      }),
      fold: (o, seen) => {
        if (seen.enrolled) o.enrolled++
        o.identification = seen.identification
        o.clientVersion = seen.clientVersion
      },
      merge: (o, kept, latest) => {
        o.enrolled += kept.enrolled
        if (latest) {
          o.identification = kept.identification
          o.clientVersion = kept.clientVersion
        }
      },
      write: (batch, now) => recordObservations(options.db, batch, options.maxEntries, now),
    })
  }
}
