/**
 * Table types. Times are epoch milliseconds (bigint in PostgreSQL, integer in SQLite);
 * the wire uses RFC 3339. Secrets (sessions, OIDC states, upload tokens, share links) are
 * stored only as SHA-256 hex hashes.
 */
import type { Insertable, Selectable } from 'kysely'

export interface UserTable {
  id: string
  /** OIDC `sub`, or `edge_access:<sub>` for edge-proxy identities. */
  oidc_subject: string
  display_name: string | null
  email: string | null
  created_at: number
  last_seen_at: number
}

export interface SessionTable {
  token_hash: string
  user_id: string
  /** JSON array of group names from the identity provider. */
  groups: string
  created_at: number
  expires_at: number
}

export interface OidcStateTable {
  state_hash: string
  nonce: string
  code_verifier: string
  return_to: string
  expires_at: number
}

export interface ArtifactTable {
  id: string
  title: string
  owner_id: string
  visibility: 'private' | 'authenticated'
  /** Number of the newest version (every artifact has at least one). */
  latest_version: number
  created_at: number
  updated_at: number
  deleted_at: number | null
  deleted_by: string | null
}

export interface VersionTable {
  id: string
  artifact_id: string
  number: number
  upload_id: string
  title: string
  entrypoint: string
  file_count: number
  total_bytes: number
  zip_sha256: string
  created_by: string
  created_at: number
}

export interface VersionFileTable {
  version_id: string
  path: string
  size: number
  sha256: string
  content_type: string
}

export interface GrantTable {
  artifact_id: string
  user_id: string
  role: 'viewer' | 'editor'
  created_by: string
  created_at: number
}

export interface UploadTable {
  id: string
  token_hash: string
  user_id: string
  /** Set when the upload adds a version to an existing artifact. */
  artifact_id: string | null
  title: string
  entrypoint: string
  state: 'open' | 'receiving' | 'received' | 'committed'
  size: number | null
  zip_sha256: string | null
  /** The PUT receiving the bundle now (state `receiving`); null otherwise. */
  put_attempt: string | null
  created_at: number
  expires_at: number
}

export interface ShareTable {
  id: string
  secret_hash: string
  artifact_id: string
  /** Pinned version id; null follows the newest version. */
  version_id: string | null
  label: string | null
  created_by: string
  created_at: number
  expires_at: number | null
  max_views: number | null
  views: number
  revoked_at: number | null
  revoked_by: string | null
}

export interface AuditTable {
  id: string
  at: number
  actor_id: string | null
  actor_subject: string | null
  action: string
  target_type: string
  target_id: string
  /** JSON object with non-secret details. */
  details: string
}

export interface BrandingImageTable {
  sha256: string
  /** From the magic bytes: image/png, image/jpeg or image/webp. */
  content_type: string
  size: number
  data_base64: string
  created_at: number
}

export interface BrandingThemeTable {
  name: string
  site_name: string
  message: string
  /** JSON object of #rrggbb colours. */
  palette: string
  logo_sha256: string | null
  favicon_sha256: string | null
  /** 1 for the one active theme, else 0. */
  active: number
  updated_at: number
  updated_by: string
}

export interface DB {
  users: UserTable
  sessions: SessionTable
  oidc_states: OidcStateTable
  artifacts: ArtifactTable
  versions: VersionTable
  version_files: VersionFileTable
  grants: GrantTable
  uploads: UploadTable
  shares: ShareTable
  audit_events: AuditTable
  branding_images: BrandingImageTable
  branding_themes: BrandingThemeTable
}

export type UserRow = Selectable<UserTable>
export type ArtifactRow = Selectable<ArtifactTable>
export type VersionRow = Selectable<VersionTable>
export type VersionFileRow = Selectable<VersionFileTable>
export type UploadRow = Selectable<UploadTable>
export type ShareRow = Selectable<ShareTable>
export type GrantRow = Selectable<GrantTable>
export type AuditRow = Selectable<AuditTable>
export type NewAudit = Insertable<AuditTable>
export type BrandingThemeRow = Selectable<BrandingThemeTable>
