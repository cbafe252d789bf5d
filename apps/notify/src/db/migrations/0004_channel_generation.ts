/**
 * PostgreSQL only: a generation number that every change to `channels` advances, in the
 * same transaction (a statement trigger). The delivery path reads it together with the
 * hook, in the token lookup's own statement, and keeps channel lookups cached only for
 * that generation (ingest/lookups.ts): a channel created on any node is seen by the next
 * delivery, without a query per delivery for the channel.
 */
import { type DatabaseKind, type Migration, sql } from '@gatehouse/kit/db/database.ts'
import type { Kysely } from 'kysely'

export function channelGenerationMigration(kind: DatabaseKind): Migration {
  return {
    async up(db: Kysely<unknown>) {
      if (kind !== 'postgres') return
      await sql`create table channel_generation (
        id integer primary key check (id = 1),
        generation bigint not null
      )`.execute(db)
      await sql`insert into channel_generation (id, generation) values (1, 0)`.execute(db)
      await sql`create function channel_generation_advance() returns trigger language plpgsql as $$
        begin update channel_generation set generation = generation + 1 where id = 1; return null; end $$`.execute(db)
      await sql`create trigger channels_generation after insert or update or delete or truncate on channels
        for each statement execute function channel_generation_advance()`.execute(db)
    },
  }
}
