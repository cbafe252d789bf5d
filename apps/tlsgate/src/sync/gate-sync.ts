/**
 * The control-plane sync of `serve`: the kit's store-backed sync (observations in pages of 16,
 * policy pull with the cursor, managed trusted ranges, `tlsgate_sync_*` metrics; the same as the
 * SSH gate's) with this gate's reads and decision apply, and the hourly SMTP correlation
 * reports uploaded after each cycle.
 */
import { ControlPlaneClient } from '@gatehouse/kit/control-plane-client.ts'
import type { BypassRanges } from '@gatehouse/kit/gate-bypass.ts'
import { POLICY_CURSOR_KEY, startGateStoreSync, UPLOAD_ACK_KEY } from '@gatehouse/kit/gate-store-sync.ts'
import type { SyncControlPlane, SyncHandle } from '@gatehouse/kit/gate-sync.ts'
import type { Logger } from '@gatehouse/kit/logger.ts'
import type { AppMetrics } from '@gatehouse/kit/metrics.ts'
import { JA4_PATTERN } from '../cli/validate.ts'
import type { Store } from '../db/index.ts'
import { changedSince } from '../fingerprints/sync-store.ts'
import { hourStart, type SmtpReporter } from '../smtp/index.ts'

/** `sync_state` keys. */
export { POLICY_CURSOR_KEY, UPLOAD_ACK_KEY }

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
  const db = o.store.db
  const log = o.logger.child({ component: 'sync' })
  const smtpQueued = o.metrics.gauge('smtp_reports_queued', 'SMTP correlation reports waiting for upload')
  smtpQueued.set(0)
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

  const handle = startGateStoreSync({
    controlPlane: o.controlPlane,
    db,
    changedSince: (after, limit) => changedSince(db, after, limit),
    bypass: o.bypass,
    logger: o.logger,
    metrics: o.metrics,
    onCycle: () => void uploadSmtpReports(),
    // The gate computes JA4, in lower case; another form would match no client.
    pulledFingerprint: (f) => (JA4_PATTERN.test(f.toLowerCase()) ? f.toLowerCase() : undefined),
  })
  return {
    ...handle,
    uploadSmtpReports,
    reloadCredentials(token?: string) {
      const reloaded = handle.reloadCredentials(token)
      if (reloaded) reportsClient?.reloadCredentials(token)
      return reloaded
    },
    async stop() {
      await handle.stop()
      await uploading
      await reportsClient?.close()
    },
  }
}
