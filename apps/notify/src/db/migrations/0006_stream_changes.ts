/**
 * The realtime stream's change log (realtime/changes.ts): lifecycle, read-state, archive,
 * channel and membership changes, one row each, written in the transaction that makes the
 * change. New notifications need no row: the stream reads them from `notifications` by id.
 * A change row is never updated; old rows may be pruned (a resume from before the oldest
 * kept row is answered with a `reset` event).
 */
import { type DatabaseKind, type Migration, sql } from '@gatehouse/kit/db/database.ts'
import type { Kysely } from 'kysely'

export function streamChangesMigration(kind: DatabaseKind): Migration {
  return {
    async up(db: Kysely<unknown>) {
      const id = kind === 'postgres' ? sql`bigserial primary key` : sql`integer primary key autoincrement`
      await sql`create table stream_changes (
        id ${id},
        kind text not null,
        channel text,
        user_id text,
        data text not null,
        created_at text not null
      )`.execute(db)
    },
  }
}
