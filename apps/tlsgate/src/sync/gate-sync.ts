/**
 * The control-plane sync of `serve`: the kit's sync loop (observations in pages of 16, policy
 * pull with the cursor; the same as the SSH gate's) with this gate's store as source and sink,
 * the managed trusted ranges, the `tlsgate_sync_*` metrics, and the hourly SMTP correlation
 * reports uploaded after each cycle.
 */
import { ControlPlaneClient } from '@gatehouse/kit/control-plane-client.ts'
import { type BypassRanges, replaceManagedRanges } from '@gatehouse/kit/gate-bypass.ts'
import { toObservation } from '@gatehouse/kit/gate-observation.ts'
import { type SyncControlPlane, type SyncHandle, startSync } from '@gatehouse/kit/gate-sync.ts'
import type { Logger } from '@gatehouse/kit/logger.ts'
import type { AppMetrics } from '@gatehouse/kit/metrics.ts'
import type { Store } from '../db/index.ts'
import { applyDecisions, changedSince, getSyncState, setSyncState } from '../fingerprints/sync-store.ts'
import { hourStart, type SmtpReporter } from '../smtp/index.ts'

/** `sync_state` keys. */
export const UPLOAD_ACK_KEY = 'upload_ack_seq'
export const POLICY_CURSOR_KEY = 'policy_cursor'

export interface GateSyncOptions {
  controlPlane: SyncControlPlane
  store: Store
  bypass: BypassRanges
  logger: Logger
  metrics: AppMetrics
  smtpReports?: SmtpReporter | undefined
}

export interface GateSync extends SyncHandle {
  /**
   * Cut the SMTP reports due now (windows that ended at the last full hour; with `final`, every
   * window up to this moment, for shutdown) and upload the queue. Also run after every cycle.
   */
  uploadSmtpReports(final?: boolean): Promise<void>
}

export function startGateSync(o: GateSyncOptions): GateSync {
  const { store, logger } = o
  const db = store.db
  const log = logger.child({ component: 'sync' })
  const cycles = o.metrics.counter('sync_cycles_total', 'Control-plane sync cycles, by result (ok, failed)', ['result'])
  const lastSuccess = o.metrics.gauge(
    'sync_last_success_timestamp_seconds',
    'Unix time of the last successful control-plane sync (0: none since start)',
  )
  const managed = o.metrics.gauge('bypass_ranges', 'Trusted (bypass) ranges in force, by source', ['source'])
  const smtpQueued = o.metrics.gauge('smtp_reports_queued', 'SMTP correlation reports waiting for upload')
  for (const result of ['ok', 'failed']) cycles.inc({ result }, 0)
  lastSuccess.set(0)
  smtpQueued.set(0)
  managed.set({ source: 'static' }, o.bypass.staticRanges.length)
  managed.set({ source: 'control_plane' }, o.bypass.managedRanges.length)
  let healthy: boolean | undefined
  const reportsClient = o.smtpReports ? new ControlPlaneClient(o.controlPlane) : undefined
  let uploading: Promise<void> = Promise.resolve()

  const uploadSmtpReports = (final = false) => {
    const reports = o.smtpReports
    if (!reports || !reportsClient) return Promise.resolve()
    uploading = uploading.then(async () => {
      reports.cut(final ? Date.now() : hourStart(Date.now()))
      try {
        const r = await reports.upload(reportsClient, log)
        if (r.sent > 0) log.info(r, 'SMTP reports uploaded')
      } catch (err) {
        log.warn(
          { reason: (err as Error).message, queued: reports.queued.length },
          'SMTP report upload failed; retrying later',
        )
      }
      smtpQueued.set(reports.queued.length)
    })
    return uploading
  }

  const handle = startSync({
    controlPlane: o.controlPlane,
    logger: log,
    source: {
      acked: async () => Number((await getSyncState(db, UPLOAD_ACK_KEY)) ?? 0),
      changedSince: async (after, limit) =>
        (await changedSince(db, after, limit)).map((e) => ({ seq: e.change_seq, observation: toObservation(e) })),
      ack: (seq) => setSyncState(db, UPLOAD_ACK_KEY, String(seq), new Date().toISOString()),
    },
    sink: {
      cursor: () => getSyncState(db, POLICY_CURSOR_KEY),
      applyDecisions: async (decisions, cursor) => {
        await applyDecisions(db, decisions, new Date().toISOString(), { key: POLICY_CURSOR_KEY, value: cursor })
      },
      replaceManagedRanges: async (cidrs) => {
        await replaceManagedRanges(db, o.bypass, cidrs, log)
        managed.set({ source: 'control_plane' }, o.bypass.managedRanges.length)
      },
    },
    onCycle: (r) => {
      cycles.inc({ result: r.ok ? 'ok' : 'failed' })
      if (r.ok) lastSuccess.set(Date.now() / 1000)
      if (r.ok && healthy !== true) log.info({ uploaded: r.uploaded, decisions: r.decisions }, 'control plane sync ok')
      healthy = r.ok
      void uploadSmtpReports()
    },
  })
  return {
    ...handle,
    uploadSmtpReports,
    async stop() {
      await handle.stop()
      await uploading
      await reportsClient?.close()
    },
  }
}
