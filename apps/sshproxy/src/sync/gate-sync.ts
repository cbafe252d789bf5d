/**
 * Wiring of the control-plane sync into `serve`: the gate's store as source (entries changed
 * since the acknowledged upload) and sink (decisions plus the policy cursor in one
 * transaction; managed trusted ranges), and the sync metrics.
 */
import type { AppMetrics, Logger } from '@gatehouse/kit'
import { toObservation } from '@gatehouse/kit/gate-observation.ts'
import { type SyncHandle, startSync } from '@gatehouse/kit/gate-sync.ts'
import { type BypassRanges, replaceManagedRanges } from '../bypass/ranges.ts'
import type { ControlPlaneConfig } from '../config.ts'
import type { Store } from '../db/index.ts'
import { applyDecisions, changedSince, getSyncState, setSyncState } from '../fingerprints/sync-store.ts'

/** `sync_state` keys. */
export const UPLOAD_ACK_KEY = 'upload_ack_seq'
export const POLICY_CURSOR_KEY = 'policy_cursor'

export interface GateSyncOptions {
  controlPlane: ControlPlaneConfig
  store: Store
  bypass: BypassRanges
  logger: Logger
  metrics: AppMetrics
}

export function startGateSync(o: GateSyncOptions): SyncHandle {
  const { store, logger } = o
  const db = store.db
  const log = logger.child({ component: 'sync' })
  const cycles = o.metrics.counter('sync_cycles_total', 'Control-plane sync cycles, by result (ok, failed)', ['result'])
  const lastSuccess = o.metrics.gauge(
    'sync_last_success_timestamp_seconds',
    'Unix time of the last successful control-plane sync (0: none since start)',
  )
  const managed = o.metrics.gauge('bypass_ranges', 'Trusted (bypass) ranges in force, by source', ['source'])
  for (const result of ['ok', 'failed']) cycles.inc({ result }, 0)
  lastSuccess.set(0)
  managed.set({ source: 'static' }, o.bypass.staticRanges.length)
  managed.set({ source: 'control_plane' }, o.bypass.managedRanges.length)
  let healthy: boolean | undefined

  return startSync({
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
      // The first success, and the first one after failures, are worth a line; quiet ones are not.
      if (r.ok && healthy !== true) {
        log.info({ uploaded: r.uploaded, decisions: r.decisions }, 'control plane sync ok')
      }
      healthy = r.ok
    },
  })
}
