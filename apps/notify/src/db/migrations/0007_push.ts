/**
 * Web Push (README "Push notifications"):
 * - `settings`: cluster settings, values every notify process shares, written once (the
 *   VAPID key pair; `action_encryption_key` belongs here too). A setting is never rewritten:
 *   the first process to insert it wins and every other one reads that row.
 * - `push_subscriptions`: one row per browser (endpoint) of a reader; the endpoint is unique,
 *   so a browser re-subscribing replaces its row instead of adding one.
 * - `push_preferences`: a reader's per-channel choice (`all`, `important`, `off`); no row
 *   means `all`.
 * - `push_cursor`: the last notification id handed to push delivery (one row). Processes
 *   claim the ids after it with a compare-and-set, so each notification is pushed once per
 *   cluster. It starts at the newest notification: nothing stored before push existed is sent.
 */
import { type DatabaseKind, type Migration, sql } from '@gatehouse/kit/db/database.ts'
import type { Kysely } from 'kysely'

export function pushMigration(_kind: DatabaseKind): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await sql`create table settings (
        name text primary key,
        value text not null,
        created_at text not null
      )`.execute(db)
      await sql`create table push_subscriptions (
        id text primary key,
        user_id text not null references users(id) on delete cascade,
        endpoint text not null unique,
        p256dh text not null,
        auth text not null,
        label text not null,
        created_at text not null,
        last_success_at text,
        last_failure text
      )`.execute(db)
      await sql`create index push_subscriptions_user on push_subscriptions(user_id)`.execute(db)
      await sql`create table push_preferences (
        user_id text not null references users(id) on delete cascade,
        channel text not null references channels(name) on delete cascade,
        mode text not null check (mode in ('all', 'important', 'off')),
        primary key (user_id, channel)
      )`.execute(db)
      await sql`create table push_cursor (
        id integer primary key check (id = 1),
        high_water bigint not null
      )`.execute(db)
      await sql`insert into push_cursor (id, high_water)
        select 1, coalesce(max(id), 0) from notifications`.execute(db)
    },
  }
}
