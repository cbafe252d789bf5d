/**
 * SQLite only: an fts5vocab view over the trigram index, giving the number of
 * notifications that contain each trigram (see inbox/trigram-stats.ts).
 */
import { type DatabaseKind, type Migration, sql } from '@gatehouse/kit/db/database.ts'
import type { Kysely } from 'kysely'

export function searchVocabularyMigration(kind: DatabaseKind): Migration {
  return {
    async up(db: Kysely<unknown>) {
      if (kind !== 'sqlite') return
      await sql`create virtual table notification_fts_vocab using fts5vocab(notification_fts, 'row')`.execute(db)
    },
  }
}
