import { promisify } from 'node:util'
import { constants, gzip } from 'node:zlib'
import type { Kysely, Migration } from 'kysely'
import { sql } from 'kysely'

const gzipAsync = promisify(gzip)

/**
 * History rows keep the prior zone text gzip-compressed (about 5x smaller: a 100k-record zone
 * is 2.4 MiB of text per saved revision), with its uncompressed size for listings. SQLite
 * cannot change a column's type, so the table is rebuilt and every existing row compressed.
 */
export const historyGzip: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('zone_history_v2')
      .addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
      .addColumn('zone', 'text', (c) => c.notNull())
      .addColumn('revision', 'text', (c) => c.notNull())
      .addColumn('role', 'text', (c) => c.notNull())
      .addColumn('serial', 'bigint', (c) => c.notNull())
      .addColumn('zone_gzip', 'blob', (c) => c.notNull())
      .addColumn('zone_bytes', 'integer', (c) => c.notNull())
      .addColumn('saved_at', 'text', (c) => c.notNull())
      .addColumn('request_id', 'text', (c) => c.notNull())
      .addColumn('reason', 'text', (c) => c.notNull())
      .execute()
    // One row at a time: a long history of a large zone does not fit in memory at once.
    const ids = await sql<{ id: number }>`select id from zone_history order by id`.execute(db)
    for (const { id } of ids.rows) {
      const { rows } = await sql<{
        zone: string
        revision: string
        role: string
        serial: number
        zone_text: string
        saved_at: string
        request_id: string
        reason: string
      }>`select zone, revision, role, serial, zone_text, saved_at, request_id, reason from zone_history where id = ${id}`.execute(
        db,
      )
      const r = rows[0]!
      const gz = await gzipAsync(Buffer.from(r.zone_text, 'utf8'), { level: constants.Z_BEST_SPEED })
      await sql`insert into zone_history_v2 (id, zone, revision, role, serial, zone_gzip, zone_bytes, saved_at, request_id, reason)
        values (${id}, ${r.zone}, ${r.revision}, ${r.role}, ${r.serial}, ${gz}, ${Buffer.byteLength(r.zone_text)}, ${r.saved_at}, ${r.request_id}, ${r.reason})`.execute(
        db,
      )
    }
    await db.schema.dropTable('zone_history').execute()
    await db.schema.alterTable('zone_history_v2').renameTo('zone_history').execute()
    await db.schema.createIndex('zone_history_zone').on('zone_history').columns(['zone', 'id']).execute()
  },
}
