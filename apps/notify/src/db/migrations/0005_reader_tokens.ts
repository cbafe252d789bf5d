/**
 * Reader API tokens: a script reads the inbox as a reader with `Authorization: Bearer
 * ntr_...` instead of a session cookie. Only the SHA-256 hash of a token is stored.
 */
import type { DatabaseKind, Migration } from '@gatehouse/kit/db/database.ts'
import { type Kysely, sql } from 'kysely'

export function readerTokensMigration(_kind: DatabaseKind): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await sql`create table reader_tokens (
        id text primary key,
        user_id text not null references users(id) on delete cascade,
        name text not null,
        token_hash text not null unique,
        created_at text not null,
        last_used_at text
      )`.execute(db)
      await sql`create index reader_tokens_user on reader_tokens(user_id)`.execute(db)
    },
  }
}
