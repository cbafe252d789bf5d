/**
 * Retention of the administrative audit log (`NOTIFY_AUDIT_RETENTION`, housekeeping.ts), as
 * edgegate, artsvc and dnsctl keep theirs: entries stay immutable, but the retention may delete
 * those older than its cutoff. It records the cutoff in `audit_purges` inside its transaction
 * (and removes it before commit); the triggers refuse any other delete, and every update, as
 * before. An index on the time finds the entries past the cutoff (ids do not follow it where
 * processes' clocks disagree).
 */
import { type DatabaseKind, type Migration, sql } from '@gatehouse/kit/db/database.ts'
import type { Kysely } from 'kysely'

export function auditRetentionMigration(kind: DatabaseKind): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await sql`create table audit_purges (before text not null)`.execute(db)
      await sql`create index admin_audit_created on admin_audit (created_at)`.execute(db)
      if (kind === 'sqlite') {
        await sql`drop trigger admin_audit_no_delete`.execute(db)
        await sql`create trigger admin_audit_no_delete before delete on admin_audit
          when not exists (select 1 from audit_purges p where old.created_at < p.before) begin
          select raise(abort, 'audit entries are immutable');
        end`.execute(db)
        return
      }
      await sql`create or replace function admin_audit_immutable() returns trigger language plpgsql as $$
        begin
          if tg_op = 'DELETE' and exists (select 1 from audit_purges p where old.created_at < p.before) then
            return old;
          end if;
          raise exception 'audit entries are immutable';
        end $$`.execute(db)
    },
  }
}
