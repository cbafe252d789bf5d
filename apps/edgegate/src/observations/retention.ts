/**
 * The periodic cleanup, every `--retention-interval`: sightings past `--sighting-retention`
 * (aggregates and decisions stay), undecided aggregates past their bounds (bounds.ts), web signals past `--signal-retention`,
 * deleted decisions past `--deleted-decision-retention` (decisions/store.ts), and audit log
 * entries past `--audit-retention` (a year by default; 0 keeps them: every controller pass that
 * decides something adds entries, so an unbounded log grows with the fleet's traffic). Rows go in batches
 * (kit `deleteBefore`), so a backlog never holds the database, or on SQLite the server, for long.
 */
import type { AppMetrics, DatabaseKind, Logger } from '@gatehouse/kit'
import { deleteBefore } from '@gatehouse/kit/db/batched-delete.ts'
import { periodic } from '@gatehouse/kit/periodic.ts'
import type { Kysely } from 'kysely'
import type { DB } from '../db/schema.ts'
import { purgeTombstones } from '../decisions/store.ts'
import { sweepEvidence } from '../web/evidence.ts'
import { sweepTlsSightings } from '../web/sightings.ts'
import { DEFAULT_MAX_FINGERPRINTS, pruneAggregatesToCap, removeUnseenAggregates } from './bounds.ts'
import { sweepSightings } from './store.ts'

export interface RetentionSettings {
  sightingRetentionMs: number
  signalRetentionMs: number
  /** 0 keeps every entry. */
  auditRetentionMs: number
  /** Tombstones of deleted decisions older than this go; 0 keeps them. */
  deletedDecisionRetentionMs?: number
  /** Undecided aggregates unseen this long go; 0 keeps them. */
  fingerprintRetentionMs: number
  /** Aggregates per node; 0 is the default, -1 unlimited. */
  maxFingerprints: number
  intervalMs: number
}

/** Remove signals observed before the cutoff, a batch at a time; returns how many. */
export function sweepSignals(db: Kysely<DB>, cutoffMs: number): Promise<number> {
  return deleteBefore(db, 'signals', 'observed_ms', cutoffMs)
}

export function startRetention(
  db: Kysely<DB>,
  kind: DatabaseKind,
  settings: RetentionSettings,
  log: Logger,
  metrics?: Pick<AppMetrics, 'counter' | 'gauge'>,
): () => Promise<void> {
  const removed = metrics?.counter(
    'fingerprint_aggregates_removed_total',
    'Undecided fingerprint aggregates removed: unseen within --fingerprint-retention, or past --max-fingerprints for their node',
    ['reason'],
  )
  const purged = metrics?.counter(
    'deleted_decisions_removed_total',
    'Deleted decisions (tombstones) removed past --deleted-decision-retention',
  )
  const job = periodic(
    async () => {
      const now = Date.now()
      const n = await sweepSightings(db, kind, now - settings.sightingRetentionMs)
      if (n > 0) log.info({ rewritten: n }, 'old sightings removed')
      const tls = await sweepTlsSightings(db, now - settings.sightingRetentionMs)
      if (tls > 0) log.info({ removed: tls }, 'old TLS sightings removed from the web evidence')
      const signals = await sweepSignals(db, now - settings.signalRetentionMs)
      if (signals > 0) log.info({ removed: signals }, 'old web signals removed')
      await sweepEvidence(db, now - settings.signalRetentionMs, now - settings.sightingRetentionMs)
      if (settings.fingerprintRetentionMs > 0) {
        const unseen = await removeUnseenAggregates(db, now - settings.fingerprintRetentionMs)
        if (unseen > 0) {
          removed?.inc({ reason: 'retention' }, unseen)
          log.info(
            { removed: unseen },
            'undecided fingerprint aggregates not seen within --fingerprint-retention removed',
          )
        }
      }
      const max = settings.maxFingerprints === 0 ? DEFAULT_MAX_FINGERPRINTS : settings.maxFingerprints
      await pruneAggregatesToCap(db, max, (instanceId, n) => {
        removed?.inc({ reason: 'cap' }, n)
        log.warn(
          { instance_id: instanceId, removed: n, max_fingerprints: max },
          `node ${instanceId} had more fingerprint aggregates than --max-fingerprints (usually a scan: each client varying its KEXINIT is a new fingerprint): its least recently seen undecided ones were removed`,
        )
      })
      if (settings.deletedDecisionRetentionMs) {
        const tombstones = await purgeTombstones(db, kind, (now - settings.deletedDecisionRetentionMs) * 1000)
        purged?.inc(tombstones)
        if (tombstones > 0)
          log.info(
            { removed: tombstones },
            'deleted decisions older than --deleted-decision-retention removed (a gate that has not pulled since pulls its whole policy again)',
          )
      }
      if (settings.auditRetentionMs > 0) {
        const audit = await deleteBefore(db, 'audit_log', 'at_ms', now - settings.auditRetentionMs)
        if (audit > 0) log.info({ removed: audit }, 'old audit log entries removed')
      }
    },
    {
      intervalMs: settings.intervalMs,
      firstRunMs: 0,
      ...(metrics ? { metrics: { app: metrics, job: 'retention' } } : {}),
      onError: (err) =>
        log.error(
          { err },
          'retention sweep failed (sightings, aggregates, signals or audit log); it runs again next interval',
        ),
    },
  )
  return job.stop
}
