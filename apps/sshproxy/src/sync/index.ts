/**
 * The SSH gate's control-plane sync (the loop and client are the kit's, shared with tlsgate): give it the control-plane settings, a
 * source of changed entries and a sink for decisions and managed bypass ranges. The loop
 * (`startSync`) never touches the gate's database itself; `startGateSync` (gate-sync.ts) is
 * the wiring `serve` uses: the store functions of `fingerprints/sync-store.ts` as source and
 * sink (`sync_state` keys `upload_ack_seq` and `policy_cursor`), the managed trusted ranges of
 * `bypass/ranges.ts`, and the `sshproxy_sync_*` metrics.
 *
 * @example
 * const sync = config.controlPlane
 *   ? startGateSync({ controlPlane: config.controlPlane, store, bypass: gate.bypass, logger, metrics: gate.metrics })
 *   : undefined
 * // shutdown, before closing the database:
 * await sync?.stop()
 */

export { type GateEntry, toObservation } from '@gatehouse/kit/gate-observation.ts'
export {
  type CycleResult,
  nextDelay,
  type SyncHandle,
  type SyncOptions,
  type SyncSink,
  type SyncSource,
  type SyncStatus,
  startSync,
} from '@gatehouse/kit/gate-sync.ts'
export { ControlPlaneClient, checkControlPlane, type SyncControlPlane, SyncError } from './client.ts'
export { POLICY_CURSOR_KEY, startGateSync, UPLOAD_ACK_KEY } from './gate-sync.ts'
