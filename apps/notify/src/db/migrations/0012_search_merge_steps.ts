/**
 * SQLite only: FTS5 stops merging the trigram index's segments by itself. Its automatic
 * merging ran in the commit of whichever indexing batch filled a level, merging several
 * segments at once while the serving thread waited; the search indexer now merges in
 * bounded steps between batches instead (inbox/indexer.ts, `searchMerger`). The setting is
 * kept in the index's own configuration. Where no indexer runs, FTS5 still merges a level
 * once it holds 16 segments (its `crisismerge`), so the index never grows unbounded.
 */
import { type DatabaseKind, type Migration, sql } from '@gatehouse/kit/db/database.ts'
import type { Kysely } from 'kysely'

export function searchMergeStepsMigration(kind: DatabaseKind): Migration {
  return {
    async up(db: Kysely<unknown>) {
      if (kind !== 'sqlite') return
      await sql`insert into notification_fts (notification_fts, rank) values ('automerge', 0)`.execute(db)
    },
  }
}
