/**
 * A gate's sync wired to its SQLite store (sshproxy, tlsgate): entries changed since the
 * acknowledged upload as the source (`sync_state` key `upload_ack_seq`), the pulled decisions
 * applied with the policy cursor (`policy_cursor`) as the sink, the managed trusted ranges, and
 * the `<app>_sync_*` / `<app>_bypass_ranges` metrics. The gate supplies how it reads changed
 * entries (its own columns); the loop is gate-sync.ts.
 */
import type { Kysely } from 'kysely'
import { watchCertificateExpiry } from './certificate-expiry.ts'
import { type BypassRanges, type ManagedRangesDB, replaceManagedRanges } from './gate-bypass.ts'
import { type GateEntry, toObservation } from './gate-observation.ts'
import {
  applyDecisions,
  dropUnlistedPulled,
  type GateStoreDB,
  getSyncState,
  POLICY_CURSOR_KEY,
  POLICY_RESYNC_KEY,
  setSyncState,
  UPLOAD_ACK_KEY,
} from './gate-store.ts'
import { type CycleResult, type SyncControlPlane, type SyncHandle, startSync } from './gate-sync.ts'
import type { Logger } from './logger.ts'
import type { AppMetrics } from './metrics.ts'

/** `sync_state` keys (kept in gate-store.ts, which `status` reads without loading the sync client). */
export { POLICY_CURSOR_KEY, UPLOAD_ACK_KEY }

export interface GateStoreSyncOptions {
  controlPlane: SyncControlPlane
  db: Kysely<GateStoreDB & ManagedRangesDB>
  /** Up to `limit` entries changed after `afterSeq`, oldest change first. */
  changedSince(afterSeq: number, limit: number): Promise<Array<GateEntry & { change_seq: number }>>
  bypass: BypassRanges
  logger: Logger
  metrics: AppMetrics
  /** Called after every cycle, after the metrics (tlsgate uploads its SMTP reports here). */
  onCycle?: (result: CycleResult) => void
  /**
   * A pulled fingerprint as this gate computes it (lower case), or undefined when the gate never
   * computes one of that form: such a decision could match no client, and the gate's own CLI
   * refuses to name it, so it is skipped (logged and counted) instead of stored.
   */
  pulledFingerprint?: (fingerprint: string) => string | undefined
}

export function startGateStoreSync(o: GateStoreSyncOptions): SyncHandle {
  const { db } = o
  const log = o.logger.child({ component: 'sync' })
  const cycles = o.metrics.counter('sync_cycles_total', 'Control-plane sync cycles, by result (ok, failed)', ['result'])
  const lastSuccess = o.metrics.gauge(
    'sync_last_success_timestamp_seconds',
    'Unix time of the last successful control-plane sync (0: none since start)',
  )
  const managed = o.metrics.gauge('bypass_ranges', 'Trusted (bypass) ranges in force, by source', ['source'])
  const clockOffset = o.metrics.gauge(
    'control_plane_clock_offset_seconds',
    "The control plane's clock minus this host's, from its last quick answer (about ±1 s); past ±30 s a warning is logged",
  )
  const resyncDropped = o.metrics.counter(
    'sync_resync_dropped_total',
    'Pulled verdicts dropped by a resync because the control plane no longer has them (its database went back in time)',
  )
  const skipped = o.metrics.counter(
    'sync_decisions_skipped_total',
    'Pulled decisions skipped because their fingerprint is not of the form this gate computes',
  )
  const canonical = o.pulledFingerprint ?? ((f: string) => f)
  for (const result of ['ok', 'failed']) cycles.inc({ result }, 0)
  lastSuccess.set(0)
  managed.set({ source: 'static' }, o.bypass.staticRanges.length)
  managed.set({ source: 'control_plane' }, o.bypass.managedRanges.length)
  let healthy: boolean | undefined
  const handle = startSync({
    controlPlane: o.controlPlane,
    logger: log,
    source: {
      acked: async () => Number((await getSyncState(db, UPLOAD_ACK_KEY)) ?? 0),
      changedSince: async (after, limit) =>
        (await o.changedSince(after, limit)).map((e) => ({ seq: e.change_seq, observation: toObservation(e) })),
      ack: (seq) => setSyncState(db, UPLOAD_ACK_KEY, String(seq), new Date().toISOString()),
    },
    sink: {
      cursor: () => getSyncState(db, POLICY_CURSOR_KEY),
      applyDecisions: async (pulled, cursor, authoritative) => {
        const decisions: Array<(typeof pulled)[number]> = []
        let refused: string | undefined
        let refusedCount = 0
        for (const d of pulled) {
          const fingerprint = canonical(d.fingerprint)
          if (fingerprint === undefined) {
            refused ??= d.fingerprint
            refusedCount++
          } else decisions.push(fingerprint === d.fingerprint ? d : { ...d, fingerprint })
        }
        if (refusedCount > 0) {
          skipped.inc(refusedCount)
          log.warn(
            { skipped: refusedCount, example: JSON.stringify(refused!.slice(0, 80)) },
            'pulled decisions for fingerprints this gate never computes were skipped',
          )
        }
        await applyDecisions(
          db,
          decisions,
          new Date().toISOString(),
          { key: POLICY_CURSOR_KEY, value: cursor },
          authoritative,
        )
      },
      resyncPending: async () => (await getSyncState(db, POLICY_RESYNC_KEY)) !== undefined,
      startResync: () => setSyncState(db, POLICY_RESYNC_KEY, '1', new Date().toISOString()),
      finishResync: async (listedAsPulled) => {
        const listed = new Set<string>()
        for (const f of listedAsPulled) listed.add(canonical(f) ?? f)
        const dropped = await dropUnlistedPulled(db, listed, new Date().toISOString())
        resyncDropped.inc(dropped.length)
        return dropped.length
      },
      replaceManagedRanges: async (cidrs) => {
        await replaceManagedRanges(db, o.bypass, cidrs, log)
        managed.set({ source: 'control_plane' }, o.bypass.managedRanges.length)
      },
    },
    onCycle: (r) => {
      cycles.inc({ result: r.ok ? 'ok' : 'failed' })
      if (r.clockOffsetMs !== undefined) clockOffset.set(Math.round(r.clockOffsetMs) / 1000)
      if (r.ok) lastSuccess.set(Date.now() / 1000)
      // The first success, and the first one after failures, are worth a line; quiet ones are not.
      if (r.ok && healthy !== true) log.info({ uploaded: r.uploaded, decisions: r.decisions }, 'control plane sync ok')
      healthy = r.ok
      o.onCycle?.(r)
    },
  })
  const auth = o.controlPlane.auth
  const watches = [
    ...(auth.kind === 'mtls'
      ? [
          watchCertificateExpiry({
            metrics: o.metrics,
            logger: log,
            use: 'client',
            file: auth.clientCert,
            expiresAt: handle.clientCertificateExpiresAt,
          }),
        ]
      : []),
    ...(auth.ca !== undefined
      ? [
          watchCertificateExpiry({
            metrics: o.metrics,
            logger: log,
            use: 'ca',
            file: auth.ca,
            expiresAt: () => handle.caExpiry()?.at,
            subject: () => handle.caExpiry()?.subject,
          }),
        ]
      : []),
  ]
  if (watches.length === 0) return handle
  return {
    ...handle,
    reloadCredentials(token?: string) {
      const reloaded = handle.reloadCredentials(token)
      for (const w of watches) w.check()
      return reloaded
    },
    stop() {
      for (const w of watches) w.stop()
      return handle.stop()
    },
  }
}
