import type { Kysely, Migration } from 'kysely'

/**
 * Metrics history (GET /v1/metrics/history): resolver counters summed per time bucket at two
 * resolutions, 60 s (kept 25 h) and 3600 s (kept 8 days), so 7 days stay at ~1,700 rows.
 */
export const metricPoints: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('metric_points')
      .addColumn('resolution', 'integer', (c) => c.notNull())
      .addColumn('bucket', 'bigint', (c) => c.notNull())
      .addColumn('seconds', 'double precision', (c) => c.notNull())
      .addColumn('queries', 'bigint', (c) => c.notNull())
      .addColumn('cached', 'bigint', (c) => c.notNull())
      .addColumn('nxdomain', 'bigint', (c) => c.notNull())
      .addColumn('cache_entries', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('metric_points_pk', ['resolution', 'bucket'])
      .execute()
  },
}
