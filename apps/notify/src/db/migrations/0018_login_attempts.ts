/**
 * Sign-in attempts counted in the database (auth/throttle.ts), so the limits hold across every
 * notify process on one database instead of each process applying them on its own. One row
 * per throttled key (an account or a client address, hashed: a password typed into the name
 * field is not kept) for the window that `window_end` (UTC ISO text) closes; the hourly
 * cleanup removes rows whose window has ended.
 */
import type { DatabaseKind, Migration } from '@gatehouse/kit/db/database.ts'
import { type Kysely, sql } from 'kysely'

export function loginAttemptsMigration(_kind: DatabaseKind): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await sql`create table login_attempts (
        key text primary key,
        attempts integer not null,
        window_end text not null
      )`.execute(db)
    },
  }
}
