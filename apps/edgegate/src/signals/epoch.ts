/**
 * Publisher fencing for web signal batches. A websignal pipeline elects one publisher per
 * node with a lease whose epoch only rises; the batch carries it. A batch is refused when
 * its epoch is lower than the highest seen for the node, or when it carries none after an
 * epoch was seen (an old-version publisher running beside a new one: spec versioning 3).
 * Batches without an epoch are accepted while none was ever seen (legacy log_watcher).
 */
import type { Kysely } from 'kysely'
import type { DB } from '../db/schema.ts'
import { errors } from '../errors.ts'

export async function checkPublisherEpoch(
  db: Kysely<DB>,
  instanceId: string,
  epoch: number | undefined,
  now: number,
): Promise<void> {
  if (epoch === undefined) {
    const seen = await db
      .selectFrom('signal_publishers')
      .select('epoch')
      .where('instance_id', '=', instanceId)
      .executeTakeFirst()
    if (seen) throw errors.stale_publisher_epoch()
    return
  }
  // One statement: insert, or raise the stored epoch when this one is at least as high.
  // No row changed means a higher epoch is stored.
  const r = await db
    .insertInto('signal_publishers')
    .values({ instance_id: instanceId, epoch, updated_ms: now })
    .onConflict((oc) =>
      oc.column('instance_id').doUpdateSet({ epoch, updated_ms: now }).where('signal_publishers.epoch', '<=', epoch),
    )
    .executeTakeFirst()
  if (Number(r.numInsertedOrUpdatedRows ?? 0) === 0) throw errors.stale_publisher_epoch()
}
