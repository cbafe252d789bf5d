/** Metric points (SQL): add a sampled delta to its buckets, prune, read a window. */
import type { Kysely, Transaction } from 'kysely'
import type { DB, MetricPointTable } from '../db/schema.ts'

export const RESOLUTIONS = [
  { seconds: 60, keepSeconds: 25 * 3600 },
  { seconds: 3600, keepSeconds: 8 * 86400 },
] as const

export interface Delta {
  seconds: number
  queries: number
  cached: number
  nxdomain: number
  cacheEntries: number
}

type Db = Kysely<DB> | Transaction<DB>

/** Add one sampled delta (ending at unix time `at`) to its bucket at every resolution, then prune. */
export async function addDelta(db: Kysely<DB>, at: number, d: Delta): Promise<void> {
  await db.transaction().execute(async (trx) => {
    for (const r of RESOLUTIONS) {
      const bucket = Math.floor(at / r.seconds) * r.seconds
      await trx
        .insertInto('metric_points')
        .values({
          resolution: r.seconds,
          bucket,
          seconds: d.seconds,
          queries: d.queries,
          cached: d.cached,
          nxdomain: d.nxdomain,
          cache_entries: d.cacheEntries,
        })
        .onConflict((oc) =>
          oc.columns(['resolution', 'bucket']).doUpdateSet((eb) => ({
            seconds: eb('metric_points.seconds', '+', eb.ref('excluded.seconds')),
            queries: eb('metric_points.queries', '+', eb.ref('excluded.queries')),
            cached: eb('metric_points.cached', '+', eb.ref('excluded.cached')),
            nxdomain: eb('metric_points.nxdomain', '+', eb.ref('excluded.nxdomain')),
            // The latest sample: a gauge, not a counter.
            cache_entries: eb.ref('excluded.cache_entries'),
          })),
        )
        .execute()
      await trx
        .deleteFrom('metric_points')
        .where('resolution', '=', r.seconds)
        .where('bucket', '<', at - r.keepSeconds)
        .execute()
    }
  })
}

export async function readPoints(db: Db, resolution: number, from: number): Promise<MetricPointTable[]> {
  const rows = await db
    .selectFrom('metric_points')
    .selectAll()
    .where('resolution', '=', resolution)
    .where('bucket', '>=', from)
    .orderBy('bucket')
    .execute()
  // PostgreSQL returns bigint as strings.
  return rows.map((r) => ({
    resolution: Number(r.resolution),
    bucket: Number(r.bucket),
    seconds: Number(r.seconds),
    queries: Number(r.queries),
    cached: Number(r.cached),
    nxdomain: Number(r.nxdomain),
    cache_entries: Number(r.cache_entries),
  }))
}

export async function countPoints(db: Db, resolution: number): Promise<number> {
  const row = await db
    .selectFrom('metric_points')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('resolution', '=', resolution)
    .executeTakeFirstOrThrow()
  return Number(row.n)
}
