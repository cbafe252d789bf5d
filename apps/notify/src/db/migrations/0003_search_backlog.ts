/**
 * SQLite only: the trigram index is no longer filled by a trigger in the delivery's own
 * statement but by the background indexer (inbox/indexer.ts), in batches. The one-row
 * table `search_index_state` holds its high-water mark: every notification with
 * id <= high_water is in the index; newer ones are searched by a plain scan until then.
 * Existing notifications were indexed by the trigger, so the mark starts at the newest id.
 */
import { type DatabaseKind, type Migration, sql } from '@gatehouse/kit/db/database.ts'
import type { Kysely } from 'kysely'

export function searchBacklogMigration(kind: DatabaseKind): Migration {
  return {
    async up(db: Kysely<unknown>) {
      if (kind !== 'sqlite') return
      await sql`drop trigger notifications_fts_insert`.execute(db)
      await sql`create table search_index_state (
        id integer primary key check (id = 1),
        high_water integer not null
      )`.execute(db)
      await sql`insert into search_index_state (id, high_water)
        values (1, coalesce((select max(id) from notifications), 0))`.execute(db)
    },
  }
}
