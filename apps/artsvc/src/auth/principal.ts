import type { UserRow } from '../db/schema.ts'

/** Who is calling, and how they proved it. */
export interface Principal {
  user: UserRow
  groups: string[]
  /** Listed in ARTSVC_ADMIN_SUBJECTS or a member of ARTSVC_ADMIN_GROUPS. Grants no owner rights. */
  isAdmin: boolean
  /** `session` (OIDC browser session), `edge` (verified edge assertion), `bearer` (access token). */
  via: 'session' | 'edge' | 'bearer'
  /** Set when a gateway acts for `user` (X-Gateway-OAuth-Subject): the gateway's service account. */
  gateway?: UserRow | undefined
}

export function isAdminIdentity(
  subject: string,
  groups: string[],
  adminSubjects: string[],
  adminGroups: string[],
): boolean {
  return adminSubjects.includes(subject) || groups.some((g) => adminGroups.includes(g))
}

/** Group claims: an array of strings, anything else is ignored. */
export function groupsFrom(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((g): g is string => typeof g === 'string').slice(0, 256) : []
}
