/**
 * Reader API tokens may expire (`notify token create --expires-in 720h`, or `expires_at` in
 * POST /api/v1/me/tokens), as ntfy's access tokens do: UTC ISO text like the other times in
 * this table, so the sign-in check compares text. Existing tokens keep no expiry.
 */
import type { DatabaseKind, Migration } from '@gatehouse/kit/db/database.ts'
import { type Kysely, sql } from 'kysely'

export function readerTokenExpiryMigration(_kind: DatabaseKind): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await sql`alter table reader_tokens add column expires_at text`.execute(db)
    },
  }
}
