/**
 * When each reader last signed in (a password, the identity provider or a desktop app's
 * approval: every new session), for the user panel and `notify user list`: an account nobody
 * has used for months is one to disable. UTC ISO text; null: never since this migration.
 */
import type { DatabaseKind, Migration } from '@gatehouse/kit/db/database.ts'
import { type Kysely, sql } from 'kysely'

export function userLastSignInMigration(_kind: DatabaseKind): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await sql`alter table users add column last_sign_in_at text`.execute(db)
    },
  }
}
