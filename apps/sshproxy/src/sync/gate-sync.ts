/**
 * Wiring of the control-plane sync into `serve`: the kit's store-backed sync
 * (packages/kit/src/gate-store-sync.ts, shared with tlsgate) with this gate's reads of changed
 * entries and its decision apply.
 */
import type { AppMetrics, Logger } from '@gatehouse/kit'
import { POLICY_CURSOR_KEY, startGateStoreSync, UPLOAD_ACK_KEY } from '@gatehouse/kit/gate-store-sync.ts'
import type { SyncHandle } from '@gatehouse/kit/gate-sync.ts'
import type { BypassRanges } from '../bypass/ranges.ts'
import type { ControlPlaneConfig } from '../config.ts'
import type { Store } from '../db/index.ts'
import { changedSince } from '../fingerprints/sync-store.ts'

/** `sync_state` keys. */
export { POLICY_CURSOR_KEY, UPLOAD_ACK_KEY }

export interface GateSyncOptions {
  controlPlane: ControlPlaneConfig
  store: Store
  bypass: BypassRanges
  logger: Logger
  metrics: AppMetrics
}

export function startGateSync(o: GateSyncOptions): SyncHandle {
  const db = o.store.db
  return startGateStoreSync({
    controlPlane: o.controlPlane,
    db,
    changedSince: (after, limit) => changedSince(db, after, limit),
    bypass: o.bypass,
    logger: o.logger,
    metrics: o.metrics,
    // The spec's SSH fingerprint: 32 hex characters, computed in lower case.
    pulledFingerprint: (f) => (/^[0-9a-f]{32}$/i.test(f) ? f.toLowerCase() : undefined),
  })
}
