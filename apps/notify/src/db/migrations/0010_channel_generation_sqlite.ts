/**
 * SQLite: the channel generation that 0004 gave PostgreSQL. Every change to `channels`
 * advances it in the same transaction (row triggers: SQLite has no statement triggers), and
 * the delivery path reads it in the hook lookup's own statement, so channel lookups are
 * cached for one generation only (ingest/lookups.ts): a channel created, changed or deleted
 * through any connection is seen by the next delivery, without a read per delivery for it.
 */
import { type DatabaseKind, type Migration, sql } from '@gatehouse/kit/db/database.ts'
import type { Kysely } from 'kysely'

export function channelGenerationSqliteMigration(kind: DatabaseKind): Migration {
  return {
    async up(db: Kysely<unknown>) {
      if (kind !== 'sqlite') return
      await sql`create table channel_generation (
        id integer primary key check (id = 1),
        generation integer not null
      )`.execute(db)
      await sql`insert into channel_generation (id, generation) values (1, 0)`.execute(db)
      for (const event of ['insert', 'update', 'delete']) {
        await sql
          .raw(`create trigger channels_generation_${event} after ${event} on channels begin
            update channel_generation set generation = generation + 1 where id = 1; end`)
          .execute(db)
      }
    },
  }
}
