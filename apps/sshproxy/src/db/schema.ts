/**
 * Table types of the gate's SQLite store. JSON columns hold bounded arrays (the kit's
 * gate-store.ts decodes and merges them); timestamps are RFC 3339 UTC text.
 */
import type { Generated, Insertable, Selectable, Updateable } from 'kysely'

export type Verdict = 'approved' | 'blocked' | 'pending'
export const VERDICTS: readonly Verdict[] = ['approved', 'blocked', 'pending']

export interface FingerprintTable {
  fingerprint: string
  verdict: Verdict
  /**
   * When an operator (CLI) or the control plane last set the verdict. NULL means nobody has
   * decided yet: the entry was only observed, and the gate treats it as unknown.
   */
  decided_at: string | null
  /** Who set the verdict (`cli:<user>`, or the control plane's actor). */
  actor: string | null
  /**
   * When a pulled decision stops applying (the control plane's `expires_at`); after it the entry
   * counts as pending. NULL: no expiry (and the gate's own verdicts).
   */
  expires_at: string | null
  label: Generated<string>
  count: Generated<number>
  first_seen: string
  last_seen: string
  /** Client identification line, e.g. `SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u7`. */
  identification: Generated<string>
  client_version: Generated<string>
  /** JSON object of the KEXINIT name-lists and first_kex_packet_follows (at most 64 KiB encoded). */
  metadata: Generated<string>
  /** JSON arrays, at most 128 elements each. */
  ips: Generated<string>
  ports: Generated<string>
  /** JSON array of `{ip, port, last_seen, relay_port?}`, the 128 most recent. */
  sightings: Generated<string>
  /** Connections let through while the entry was unknown (`--allow-unknown`). */
  enrolled_count: Generated<number>
  /** Bumped from `change_counter` on every local change: the sync upload cursor compares against it. */
  change_seq: Generated<number>
  changed_at: string
  /** 1: the verdict was pulled from the control plane; 0: the gate's own, or none (kit gate-store.ts). */
  pulled: Generated<number>
}

export interface ChangeCounterTable {
  id: number
  value: number
}

/** Small key/value state for the control-plane sync (upload acknowledgement, policy cursor). */
export interface SyncStateTable {
  key: string
  value: string
  updated_at: string
}

/** Bypass ranges from the control plane (canonical CIDR text), replaced as a whole on every pull. */
export interface ManagedRangeTable {
  cidr: string
  updated_at: string
}

export interface DB {
  fingerprints: FingerprintTable
  change_counter: ChangeCounterTable
  sync_state: SyncStateTable
  managed_ranges: ManagedRangeTable
}

export type FingerprintRow = Selectable<FingerprintTable>
export type NewFingerprint = Insertable<FingerprintTable>
export type FingerprintUpdate = Updateable<FingerprintTable>
