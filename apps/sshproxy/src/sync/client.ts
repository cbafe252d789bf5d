/**
 * The SSH gate's control-plane client is the kit's (packages/kit/src/control-plane-client.ts,
 * shared with tlsgate and websignal); these are the names sshproxy's sync has always used.
 */
export {
  ControlPlaneClient,
  ControlPlaneError as SyncError,
  checkControlPlaneTarget as checkControlPlane,
} from '@gatehouse/kit/control-plane-client.ts'
export type { SyncControlPlane } from '@gatehouse/kit/gate-sync.ts'
