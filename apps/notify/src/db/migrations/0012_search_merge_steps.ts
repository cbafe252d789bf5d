/**
 * SQLite only: FTS5 stops merging the trigram index's segments by itself. Its automatic
 * merging ran in the commit of whichever indexing batch filled a level, merging several
 * segments at once while the serving thread waited; the search indexer now merges in
 * bounded steps between batches instead (inbox/indexer.ts, `searchMerger`). A step merges a
 * level once it holds 8 segments (`usermerge`): FTS5's default of 4 rewrote the same entries
 * more often, 8-20 % more CPU per row in `npm run bench:index -w apps/notify`
 * (docs/performance/notify.md). An idle indexer sets 4 for its own steps only. Both settings
 * are kept in the index's own configuration. Where no indexer runs, FTS5 still merges a level
 * once it holds 16 segments (its `crisismerge`), so the index never grows unbounded.
 */
import { type DatabaseKind, type Migration, sql } from '@gatehouse/kit/db/database.ts'
import type { Kysely } from 'kysely'

export function searchMergeStepsMigration(kind: DatabaseKind): Migration {
  return {
    async up(db: Kysely<unknown>) {
      if (kind !== 'sqlite') return
      await sql`insert into notification_fts (notification_fts, rank) values ('automerge', 0)`.execute(db)
      await sql`insert into notification_fts (notification_fts, rank) values ('usermerge', 8)`.execute(db)
    },
  }
}
