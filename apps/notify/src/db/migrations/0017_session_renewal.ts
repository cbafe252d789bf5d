/**
 * Sessions that stay alive while used (auth/sessions.ts): `expires_at` moves forward with use,
 * up to `renew_until`, the session's fixed end (`NOTIFY_SESSION_MAX_AGE` after sign-in). UTC
 * ISO text; null (sessions from before this migration): never renewed, they end as they would have.
 */
import type { DatabaseKind, Migration } from '@gatehouse/kit/db/database.ts'
import { type Kysely, sql } from 'kysely'

export function sessionRenewalMigration(_kind: DatabaseKind): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await sql`alter table sessions add column renew_until text`.execute(db)
    },
  }
}
