/**
 * PostgreSQL only: the index and statistics the inbox search needs when a term comes with
 * channel and severity filters (docs/performance/notify.md, "word + channel + severity").
 *
 * - `notifications_channel_severity (channel, severity, id)`: a bitmap of exactly the rows of
 *   one channel and severity, ANDed with the trigram index's; an empty combination ends the
 *   bitmap AND at once instead of reading 50,000 rows of the channel.
 * - Extended statistics (most common values) on (channel, severity): without them the planner
 *   multiplies the two selectivities (1/20 x 1/10 in the bench) and misjudges channels where
 *   one severity dominates, or never occurs.
 */
import { type DatabaseKind, type Migration, sql } from '@gatehouse/kit/db/database.ts'
import type { Kysely } from 'kysely'

export function searchFiltersMigration(kind: DatabaseKind): Migration {
  return {
    async up(db: Kysely<unknown>) {
      if (kind !== 'postgres') return
      await sql`create index notifications_channel_severity on notifications (channel, severity, id)`.execute(db)
      await sql`create statistics notifications_channel_severity_stats (mcv) on channel, severity from notifications`.execute(
        db,
      )
      await sql`analyze notifications`.execute(db)
    },
  }
}
