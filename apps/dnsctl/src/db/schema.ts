/** Table types of the dnsctl database (SQLite through kit). */
import type { Generated, Insertable, Selectable } from 'kysely'

export interface ZoneTable {
  name: string
  role: 'primary' | 'secondary'
  created_at: string
}

/** A prior revision of a zone, saved before each publication replaces it (spec step 5). */
export interface ZoneHistoryTable {
  id: Generated<number>
  zone: string
  revision: string
  role: 'primary' | 'secondary'
  serial: number
  /** The zone text, gzip (history-text.ts). */
  zone_gzip: Uint8Array
  /** Length of the uncompressed zone text in bytes. */
  zone_bytes: number
  saved_at: string
  request_id: string
  /** What replaced it: changes, import or delete. */
  reason: string
}

/** One per committed (or failed) zone change, creation and deletion (spec step 9). */
export interface AuditEventTable {
  id: Generated<number>
  at: string
  zone: string
  action: string
  actor: string
  request_id: string
  before_revision: string | null
  after_revision: string | null
  outcome: 'committed' | 'rolled_back' | 'aborted'
  /** JSON: change summary, warnings, failure reason, recovered flag. */
  detail: string
}

/** Resolver counters summed over one time bucket (history/store.ts). */
export interface MetricPointTable {
  /** Bucket length in seconds: 60 or 3600. */
  resolution: number
  /** Unix time (s) the bucket starts. */
  bucket: number
  /** Sampled seconds that fell in the bucket (the rate denominator). */
  seconds: number
  queries: number
  cached: number
  nxdomain: number
  /** Largest cache entry count sampled in the bucket. */
  cache_entries: number
}

/** The stored HA role: one row (id 1) once a promotion happened. */
export interface HaStateTable {
  id: number
  role: 'primary' | 'secondary'
  /** Grows with every role change; a primary that sees a peer primary with a higher epoch fences itself. */
  epoch: number
  /** Set once a primary saw its peer promoted with this higher epoch: it stays read-only (fenced) until demoted. */
  fenced_by_epoch: number | null
  changed_at: string
  actor: string
  request_id: string
}

/** One per promotion attempt (committed or refused). */
export interface HaEventTable {
  id: string
  at: string
  action: string
  actor: string
  request_id: string
  outcome: 'committed' | 'refused' | 'failed'
  from_role: string
  to_role: string
  epoch: number
  /** JSON: zones taken over, why refused. */
  detail: string
}

/** A committed revision of the provider zone allowlist (the newest one is in force). */
export interface ProviderAllowlistTable {
  seq: number
  revision: string
  /** JSON array of zone names. */
  zones: string
  committed_at: string
  actor: string
  request_id: string
}

export interface DB {
  zones: ZoneTable
  zone_history: ZoneHistoryTable
  audit_events: AuditEventTable
  metric_points: MetricPointTable
  ha_state: HaStateTable
  ha_events: HaEventTable
  provider_allowlist: ProviderAllowlistTable
}

export type ZoneRow = Selectable<ZoneTable>
export type HistoryRow = Selectable<ZoneHistoryTable>
export type NewAuditEvent = Insertable<AuditEventTable>
export type AuditEventRow = Selectable<AuditEventTable>
export type HaStateRow = Selectable<HaStateTable>
export type HaEventRow = Selectable<HaEventTable>
export type ProviderAllowlistRow = Selectable<ProviderAllowlistTable>
