/**
 * Retention of notifications (`NOTIFY_RETENTION`, housekeeping.ts): activity events stay
 * immutable, but the retention may now delete those of a notification it removes. It lists
 * the notifications of a batch in `notification_purges` inside its transaction (and empties
 * it before commit); the triggers refuse any other delete, and every update, as before.
 * Action invocations keep no reference to the notification's row and stay: they are the
 * record of what was called.
 *
 * Read and archive marks get an index by notification: their primary keys lead with the
 * reader, and removing a notification looks its marks up (the delete, and both databases'
 * foreign-key checks, a scan of every reader's marks per notification without it).
 */
import { type DatabaseKind, type Migration, sql } from '@gatehouse/kit/db/database.ts'
import type { Kysely } from 'kysely'

export function notificationRetentionMigration(kind: DatabaseKind): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await sql`create index notification_reads_notification on notification_reads (notification_id)`.execute(db)
      await sql`create index notification_archives_notification on notification_archives (notification_id)`.execute(db)
      await sql`create table notification_purges (id ${sql.raw(kind === 'postgres' ? 'bigint' : 'integer')} primary key)`.execute(
        db,
      )
      if (kind === 'sqlite') {
        await sql`drop trigger notification_events_no_delete`.execute(db)
        await sql`create trigger notification_events_no_delete before delete on notification_events
          when not exists (select 1 from notification_purges p where p.id = old.notification_id) begin
          select raise(abort, 'activity events are immutable');
        end`.execute(db)
        return
      }
      await sql`create or replace function notification_events_immutable() returns trigger language plpgsql as $$
        begin
          if tg_op = 'DELETE' and exists (select 1 from notification_purges p where p.id = old.notification_id) then
            return old;
          end if;
          raise exception 'activity events are immutable';
        end $$`.execute(db)
    },
  }
}
