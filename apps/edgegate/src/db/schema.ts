/**
 * Table types. Times are integers (ms since the epoch, or µs for the decision clock) so
 * that both dialects compare and index them the same way; JSON columns are text.
 */
import type { Generated, Insertable, Selectable } from 'kysely'

export type NodeKind = 'sshgate' | 'tlsgate' | 'websignal' | 'log_watcher'

export interface NodeTable {
  instance_id: string
  kind: NodeKind
  /** 1 active, 0 disabled. */
  active: number
  /** SHA-256 of the bearer token, or null for certificate nodes. */
  token_hash: string | null
  /** Client-certificate identity: a subject CN / DNS SAN name ... */
  cert_name: string | null
  /** ... or the SHA-256 of the DER certificate (lowercase hex). */
  cert_fingerprint: string | null
  created_ms: number
  updated_ms: number
  last_seen_ms: number | null
  /** When the client certificate the node last presented expires (migration 0008). */
  cert_expires_ms: number | null
}
export type NodeRow = Selectable<NodeTable>

export interface AdminTable {
  name: string
  token_hash: string
  created_ms: number
  last_used_ms: number | null
  /** When the token stops working; null: never. */
  expires_ms: number | null
}
export type AdminRow = Selectable<AdminTable>

export interface SessionTable {
  id_hash: string
  admin_name: string
  created_ms: number
  expires_ms: number
}

/** Aggregate per (instance, fingerprint), merged from observations. */
export interface FingerprintTable {
  instance_id: string
  fingerprint: string
  /** The verdict the gate last reported holding. */
  reported_status: string
  first_seen_ms: number
  last_seen_ms: number
  count: number
  /** JSON arrays: at most 128 each. */
  ips: string
  ports: string
  /** JSON array of {ip, port, last_seen_ms}, the 128 most recent. */
  sightings: string
  /** Oldest sighting kept, for the retention sweep (null when there are none). */
  oldest_sighting_ms: number | null
  /** JSON object, at most 64 KiB. */
  metadata: string
  updated_ms: number
}
export type FingerprintRow = Selectable<FingerprintTable>
export type NewFingerprint = Insertable<FingerprintTable>

export interface DecisionTable {
  scope_type: string
  scope_id: string
  fingerprint: string
  status: 'approved' | 'blocked' | 'pending'
  label: string
  /** From the decision clock: unique, strictly increasing in commit order (µs since the epoch). */
  updated_us: number
  actor: string
  /** `manual`, or the automated controller's name (later issue). */
  source: string
  /** Expiry of automated blocks (ms), null for manual decisions. */
  expires_ms: number | null
  /** Aggregate evidence of automated decisions (JSON), null for manual ones. */
  evidence: string | null
  /**
   * 1 for a tombstone: the decision was deleted at `updated_us` by `actor`. It keeps
   * status `pending` and an empty label so the policy revokes it on gates; administration
   * treats it as absent. Any later write (approve, block, pending) revives the row.
   */
  deleted: Generated<number>
}
export type DecisionRow = Selectable<DecisionTable>
/** A decision write; `deleted` is always reset by `upsertDecision`. */
export type NewDecision = Omit<Insertable<DecisionTable>, 'deleted'>

export interface DecisionClockTable {
  id: number
  last_us: number
  /** The newest time of the tombstones retention removed (0: none); migration 0013. */
  purged_us: Generated<number>
}

export interface SignalTable {
  instance_id: string
  event_id: string
  observed_ms: number
  host: string
  site: string
  ip: string
  /** The client network of `ip` (its /24 or /64, `networkOf`), stored for the candidate report (0006). */
  network: string
  trigger: string
  connections: number
  errors: number
  successes: number
  window_seconds: number
  received_ms: number
}
export type SignalRow = Selectable<SignalTable>

/** The highest publisher fencing epoch seen per signal node (migration 0003). */
export interface SignalPublisherTable {
  instance_id: string
  epoch: number
  updated_ms: number
}

export interface SmtpReportTable {
  instance_id: string
  namespace: string
  listener: string
  replay_id: string
  generated_ms: number
  /** The whole report as received (JSON). */
  body: string
  received_ms: number
}
export type SmtpReportRow = Selectable<SmtpReportTable>

export interface AuditTable {
  at_ms: number
  actor: string
  action: string
  target: string
}

/** A TLS gate's sighting with the host (SNI) of the observation that carried it (migration 0004). */
export interface WebSightingTable {
  instance_id: string
  fingerprint: string
  ip: string
  port: number
  /** Lowercase SNI without a trailing dot; empty when the observation had none. */
  host: string
  seen_ms: number
}

/**
 * One signal/sighting match of the web candidate report, found at ingest (src/web/evidence.ts):
 * a TLS gate's fingerprint and a web signal, with the signal's fields the report aggregates.
 */
export interface WebEvidenceTable {
  gate: string
  fingerprint: string
  node: string
  event_id: string
  observed_ms: number
  site: string
  ip: string
  /** The signal's client network (0006). */
  network: string
  connections: number
  errors: number
  successes: number
  /** The newest matching sighting (the sighting retention sweep drops rows past it). */
  sighting_ms: number
}

/**
 * Every (TLS gate, fingerprint) with stored evidence and the newest signal time among it (0006):
 * what a report walks, in key order, to read each candidate's evidence along the
 * `web_evidence_group` index without sorting the window's matches. May overstate `last_ms` after
 * evidence is removed (a report then finds nothing for the pair); never understates it.
 */
export interface WebEvidenceGroupTable {
  gate: string
  fingerprint: string
  last_ms: number
}

/** A web signal node paired with a TLS gate: its signals match that gate's sightings whatever the SNI. */
export interface WebNodePairTable {
  websignal_id: string
  tlsgate_id: string
  actor: string
  created_ms: number
}

/** One row (id 1): the runtime kill switch every edgegate process reads. */
export interface WebEnforcementStateTable {
  id: number
  /** 1 engaged: no automated blocks whatever the configured mode. */
  kill_switch: number
  actor: string
  updated_ms: number
}

export type AlertSubject = 'silent' | 'certificate' | 'database-behind' | 'admin-token' | 'admin-token-expired'

/**
 * Which node events have been announced, shared by every process on the database, so a fleet
 * of edgegate processes tells the team once (nodes/health.ts).
 */
export interface NodeAlertTable {
  instance_id: string
  /**
   * `silent`: the node is silent, until it is heard from again; `certificate`: its expiry, once a
   * day. `admin-token` / `admin-token-expired` are an administrator's token (`instance_id`
   * `admin:<name>`): expiring, once a day; expired, once.
   */
  what: AlertSubject
  at_ms: number | bigint
}

export interface DB {
  nodes: NodeTable
  admins: AdminTable
  sessions: SessionTable
  fingerprints: FingerprintTable
  decisions: DecisionTable
  decision_clock: DecisionClockTable
  signals: SignalTable
  signal_publishers: SignalPublisherTable
  smtp_reports: SmtpReportTable
  audit_log: AuditTable
  node_alerts: NodeAlertTable
  web_sightings: WebSightingTable
  web_enforcement_state: WebEnforcementStateTable
  web_node_pairs: WebNodePairTable
  web_evidence: WebEvidenceTable
  web_evidence_groups: WebEvidenceGroupTable
}
