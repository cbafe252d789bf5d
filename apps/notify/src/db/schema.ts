/**
 * Table types for Kysely. Booleans are stored as integers (0/1) and times as RFC 3339
 * text on both backends, so one set of queries serves SQLite and PostgreSQL.
 */
import type { Generated, Insertable, Selectable } from 'kysely'

export type Visibility = 'public' | 'private'
export type ChannelRole = 'viewer' | 'operator' | 'channel_admin'
export type LifecycleState = 'received' | 'firing' | 'acknowledged' | 'resolved'
export type Severity = 'info' | 'success' | 'warning' | 'error' | 'critical'
export type NotificationKind = 'compat' | 'card' | 'message'
export type WebhookKind = 'webhook' | 'channel' | 'imported' | 'development'

export interface UserTable {
  id: string
  username: string
  /** 'human' or 'system' (a service identity that never signs in). */
  kind: 'human' | 'system'
  /** 'local' (password), 'oidc' (identity provider, keyed by oidc_subject) or 'none'. */
  auth_type: 'local' | 'oidc' | 'none'
  oidc_subject: string | null
  password_hash: string | null
  is_admin: number
  enabled: number
  created_at: string
  /** Set as each session is created; null: not since migration 0016. */
  last_sign_in_at: string | null
}

export interface SessionTable {
  token_hash: string
  user_id: string
  created_at: string
  /** Moves forward with use (auth/sessions.ts), never past `renew_until`. */
  expires_at: string
  /** The session's fixed end; null (from before migration 0017): never renewed. */
  renew_until: string | null
}

/** Sign-in attempts of one throttled key in the window `window_end` closes (migration 0018). */
export interface LoginAttemptTable {
  /** A hash of `account:<name>` or `address:<client address or IPv6 /64>`. */
  key: string
  attempts: number
  window_end: string
}

/** A reader API token (migration 0005): `Authorization: Bearer ntr_...` acts as its user. */
export interface ReaderTokenTable {
  id: string
  user_id: string
  name: string
  token_hash: string
  created_at: string
  last_used_at: string | null
  /** UTC ISO text; null: never (migration 0014). */
  expires_at: string | null
}
export type ReaderTokenRow = Selectable<ReaderTokenTable>

export interface ChannelTable {
  name: string
  display_name: string
  description: string
  accent_color: string
  visibility: Visibility
  created_at: string
}

export interface ChannelMemberTable {
  channel: string
  user_id: string
  role: ChannelRole
  created_at: string
}

export interface WebhookTable {
  id: string
  token_hash: string
  channel: string
  channel_locked: number
  kind: WebhookKind
  created_at: string
  revoked_at: string | null
}

export interface NotificationTable {
  id: Generated<number>
  channel: string
  webhook_id: string | null
  kind: NotificationKind
  title: string
  body: string
  source: string | null
  username: string | null
  severity: Severity
  state: LifecycleState
  /** JSON: the stored card or the kept compatibility attachments. */
  content: string
  /** Lower-cased text of everything searchable, indexed by trigrams. */
  search_text: string
  created_at: string
}

export interface NotificationReadTable {
  user_id: string
  notification_id: number
}

export interface ReadCursorTable {
  user_id: string
  channel: string
  last_read_id: number
}

export interface NotificationArchiveTable {
  user_id: string
  notification_id: number
  archived_at: string
}

export interface NotificationEventTable {
  id: Generated<number>
  notification_id: number
  user_id: string
  username: string
  action: 'acknowledge' | 'resolve'
  from_state: LifecycleState
  to_state: LifecycleState
  created_at: string
}

/** Notifications the retention is removing, within its transaction only (migration 0013). */
export interface NotificationPurgeTable {
  id: number
}

/** The audit retention's cutoff, within its transaction only (migration 0015). */
export interface AuditPurgeTable {
  before: string
}

/** SQLite only: the background search indexer's high-water mark (one row, id 1). */
export interface SearchIndexStateTable {
  id: number
  high_water: number
}

/** Advanced by every change to channels (one row, id 1; see ingest/lookups.ts; SQLite since 0010). */
export interface ChannelGenerationTable {
  id: number
  generation: number
}

/** The realtime stream's change log (migration 0006; see realtime/changes.ts). */
export interface StreamChangeTable {
  id: Generated<number>
  kind: 'lifecycle' | 'read' | 'archive' | 'channel' | 'membership'
  /** The channel the change concerns, when it concerns one. */
  channel: string | null
  /** Set when only this reader's streams carry the change (read state, archive, own membership). */
  user_id: string | null
  /** JSON: the event's data on the wire. */
  data: string
  created_at: string
}

/**
 * Cluster settings (migration 0007): values every notify process shares, written once
 * (settings/cluster.ts): `vapid_keys`, and `action_encryption_key` once committed (settings/action-key.ts).
 */
export interface SettingTable {
  name: string
  value: string
  created_at: string
}

/** A registered callback (migration 0008): `PUT /api/v1/action-targets/{name}` or a slash-command import. */
export interface ActionTargetTable {
  name: string
  kind: 'target' | 'slash'
  url: string
  allow_private: number
  /** AES-GCM sealed bearer credential (or slash-command token), never returned. */
  credential: string | null
  slash_trigger: string | null
  description: string
  created_at: string
  updated_at: string
}
export type ActionTargetRow = Selectable<ActionTargetTable>

/** A card action's sealed callback context, kept out of the stored card (migration 0008). */
export interface ActionContextTable {
  notification_id: number
  action_index: number
  ciphertext: string
}

/** One action invocation, keyed by (user, Idempotency-Key); immutable once final. */
export interface ActionInvocationTable {
  id: Generated<number>
  user_id: string
  username: string
  idempotency_key: string
  notification_id: number | null
  action_index: number | null
  channel: string | null
  target: string
  outcome: 'pending' | 'success' | 'failure'
  status_code: number | null
  error: string | null
  /** A slash command's reply text (Mattermost `{text}`), shown to the reader as plain text. */
  response_text: string | null
  created_at: string
  finished_at: string | null
}
export type ActionInvocationRow = Selectable<ActionInvocationTable>

/** The administrative audit log (immutable). */
export interface AdminAuditTable {
  id: Generated<number>
  actor_id: string
  actor: string
  action: string
  target: string
  /** JSON object, never a secret. */
  details: string
  created_at: string
}

/** A pending identity-provider sign-in: the state (hashed), nonce and PKCE verifier. */
export interface OidcStateTable {
  state_hash: string
  nonce: string
  code_verifier: string
  return_to: string
  expires_at: string
}

/** A desktop sign-in request (see desktop/service.ts). */
export interface DesktopLoginTable {
  id: string
  device_code_hash: string
  user_code_hash: string
  client_name: string
  client_address: string
  status: 'pending' | 'approved' | 'denied' | 'used' | 'failed'
  user_id: string | null
  failed_attempts: number
  created_at: string
  expires_at: string
}
export type DesktopLoginRow = Selectable<DesktopLoginTable>
/** A browser's Web Push subscription, owned by one reader (migration 0007; see push/). */
export interface PushSubscriptionTable {
  id: string
  user_id: string
  endpoint: string
  /** The browser's P-256 public key and auth secret (base64url), used to encrypt payloads. */
  p256dh: string
  auth: string
  /** What the reader sees in their list (browser and push service host). */
  label: string
  created_at: string
  last_success_at: string | null
  /** The last failed delivery (status and time), cleared by the next success. */
  last_failure: string | null
}
export type PushSubscriptionRow = Selectable<PushSubscriptionTable>

export type PushMode = 'all' | 'important' | 'off'

export interface PushPreferenceTable {
  user_id: string
  channel: string
  mode: PushMode
}

/** The last notification id handed to push delivery (one row, id 1). */
export interface PushCursorTable {
  id: number
  high_water: number
}

export interface DB {
  users: UserTable
  sessions: SessionTable
  login_attempts: LoginAttemptTable
  reader_tokens: ReaderTokenTable
  channels: ChannelTable
  channel_members: ChannelMemberTable
  webhooks: WebhookTable
  notifications: NotificationTable
  notification_reads: NotificationReadTable
  read_cursors: ReadCursorTable
  notification_archives: NotificationArchiveTable
  notification_events: NotificationEventTable
  notification_purges: NotificationPurgeTable
  search_index_state: SearchIndexStateTable
  channel_generation: ChannelGenerationTable
  stream_changes: StreamChangeTable
  settings: SettingTable
  action_targets: ActionTargetTable
  action_contexts: ActionContextTable
  action_invocations: ActionInvocationTable
  admin_audit: AdminAuditTable
  audit_purges: AuditPurgeTable
  oidc_states: OidcStateTable
  desktop_logins: DesktopLoginTable
  push_subscriptions: PushSubscriptionTable
  push_preferences: PushPreferenceTable
  push_cursor: PushCursorTable
}

export type UserRow = Selectable<UserTable>
export type NewUser = Insertable<UserTable>
export type ChannelRow = Selectable<ChannelTable>
export type WebhookRow = Selectable<WebhookTable>
export type NotificationRow = Selectable<NotificationTable>
export type NewNotification = Insertable<NotificationTable>
export type NotificationEventRow = Selectable<NotificationEventTable>
export type StreamChangeRow = Selectable<StreamChangeTable>
