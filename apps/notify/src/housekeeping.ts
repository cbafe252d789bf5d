/**
 * Hourly cleanup of what would otherwise only grow:
 * - the realtime stream's change log (`stream_changes`) past `NOTIFY_STREAM_RETENTION`: every
 *   acknowledgement, Mark read and archive adds a row, and a row only serves streams resuming
 *   from before it. A stream resuming from before the oldest kept row gets a `reset` event
 *   (realtime/hub.ts). The newest row always stays: the hub starts at it.
 * - sessions past their expiry: they are swept per reader at sign-in, so a reader who never
 *   signs in again would keep them forever.
 * Several processes on one database may run it at once: each step is idempotent. Rows go in
 * batches (kit `deleteBefore`), so a backlog never holds the database for long.
 */
import type { Logger } from '@gatehouse/kit'
import { deleteBefore } from '@gatehouse/kit/db/batched-delete.ts'
import type { Kysely } from 'kysely'
import type { DB } from './db/schema.ts'

const INTERVAL_MS = 3_600_000
/** The first run waits a little: a process starting up has other work first. */
const FIRST_RUN_MS = 60_000

/** Remove the stream changes recorded before `beforeMs`, all but the newest; returns how many. */
export async function pruneStreamChanges(db: Kysely<DB>, beforeMs: number): Promise<number> {
  const newest = await db
    .selectFrom('stream_changes')
    .select((eb) => eb.fn.max('id').as('id'))
    .executeTakeFirst()
  if (newest?.id == null) return 0
  // Ids grow with time, so the first recent row ends the range. The scan from the oldest row
  // passes only the rows about to go.
  const firstKept = await db
    .selectFrom('stream_changes')
    .select('id')
    .where('created_at', '>=', new Date(beforeMs).toISOString())
    .orderBy('id')
    .limit(1)
    .executeTakeFirst()
  const keepFrom = Math.min(Number(firstKept?.id ?? Number.POSITIVE_INFINITY), Number(newest.id))
  return deleteBefore(db, 'stream_changes', 'id', keepFrom)
}

/** Remove the sessions expired before `nowMs`; returns how many. */
export async function sweepSessions(db: Kysely<DB>, nowMs: number): Promise<number> {
  const r = await db.deleteFrom('sessions').where('expires_at', '<=', new Date(nowMs).toISOString()).executeTakeFirst()
  return Number(r.numDeletedRows)
}

export interface Housekeeping {
  /** One run now (tests, and the timer); a run already going is joined. */
  run(): Promise<void>
  stop(): Promise<void>
}

export function startHousekeeping(db: Kysely<DB>, settings: { streamRetentionMs: number }, log: Logger): Housekeeping {
  let running: Promise<void> | undefined
  const run = (): Promise<void> => {
    running ??= (async () => {
      const now = Date.now()
      const changes = await pruneStreamChanges(db, now - settings.streamRetentionMs)
      if (changes > 0)
        log.info({ removed: changes }, 'realtime stream changes older than NOTIFY_STREAM_RETENTION removed')
      const sessions = await sweepSessions(db, now)
      if (sessions > 0) log.info({ removed: sessions }, 'expired sessions removed')
    })()
      .catch((err: unknown) => log.warn({ err }, 'housekeeping failed; it runs again in an hour'))
      .finally(() => {
        running = undefined
      })
    return running
  }
  const first = setTimeout(run, FIRST_RUN_MS).unref()
  const timer = setInterval(run, INTERVAL_MS).unref()
  return {
    run,
    async stop() {
      clearTimeout(first)
      clearInterval(timer)
      await running
    },
  }
}
