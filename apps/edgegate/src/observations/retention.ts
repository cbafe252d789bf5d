/**
 * The periodic cleanup, every `--retention-interval`: sightings past `--sighting-retention`
 * (aggregates and decisions stay), web signals past `--signal-retention`, and audit log
 * entries past `--audit-retention` (a year by default; 0 keeps them: every controller pass that
 * decides something adds entries, so an unbounded log grows with the fleet's traffic). Rows go in batches
 * (kit `deleteBefore`), so a backlog never holds the database, or on SQLite the server, for long.
 */
import type { DatabaseKind, Logger } from '@gatehouse/kit'
import { deleteBefore } from '@gatehouse/kit/db/batched-delete.ts'
import type { Kysely } from 'kysely'
import type { DB } from '../db/schema.ts'
import { sweepEvidence } from '../web/evidence.ts'
import { sweepTlsSightings } from '../web/sightings.ts'
import { sweepSightings } from './store.ts'

export interface RetentionSettings {
  sightingRetentionMs: number
  signalRetentionMs: number
  /** 0 keeps every entry. */
  auditRetentionMs: number
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
): () => Promise<void> {
  let running: Promise<void> | undefined
  const run = () => {
    if (running) return
    const now = Date.now()
    running = sweepSightings(db, kind, now - settings.sightingRetentionMs)
      .then(async (n) => {
        if (n > 0) log.info({ rewritten: n }, 'old sightings removed')
        const tls = await sweepTlsSightings(db, now - settings.sightingRetentionMs)
        if (tls > 0) log.info({ removed: tls }, 'old TLS sightings removed from the web evidence')
        const signals = await sweepSignals(db, now - settings.signalRetentionMs)
        if (signals > 0) log.info({ removed: signals }, 'old web signals removed')
        await sweepEvidence(db, now - settings.signalRetentionMs, now - settings.sightingRetentionMs)
        if (settings.auditRetentionMs > 0) {
          const audit = await deleteBefore(db, 'audit_log', 'at_ms', now - settings.auditRetentionMs)
          if (audit > 0) log.info({ removed: audit }, 'old audit log entries removed')
        }
      })
      .catch((err) => log.error({ err }, 'sighting cleanup failed'))
      .finally(() => {
        running = undefined
      })
  }
  run()
  const timer = setInterval(run, settings.intervalMs)
  timer.unref()
  return async () => {
    clearInterval(timer)
    await running
  }
}
