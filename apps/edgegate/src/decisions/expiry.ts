/**
 * The end of expiring manual decisions (`expires_in` in the API, `--for` in the CLI): every
 * `EXPIRY_SWEEP_MS` the live manual decisions past their expiry are deleted, as a person
 * deleting them would (tombstones at fresh clock times, actor `expiry`, an audit entry
 * `decision.expire` each), in batches of 500 under the decision clock's lock, so a change made
 * meanwhile (a block made permanent) is seen before it is undone. Gates pull each as pending;
 * the policy also sent the expiry with the decision, so a TLS gate ends it on time by itself.
 * Automated blocks are the web controller's: its pass revokes them.
 */
import type { AppMetrics, Logger } from '@gatehouse/kit'
import { type DatabaseKind, sql } from '@gatehouse/kit/db/database.ts'
import { periodic } from '@gatehouse/kit/periodic.ts'
import { RepeatedFailure } from '@gatehouse/kit/repeated-failure.ts'
import type { Kysely, Transaction } from 'kysely'
import { audit } from '../admins/store.ts'
import type { DB } from '../db/schema.ts'
import { lockDecisionClock } from '../enforcement/store.ts'
import { tickClock, tombstoneDecision } from './store.ts'

export const EXPIRY_ACTOR = 'expiry'
/** How often the sweep runs: a decision ends at most this long after its expiry. */
export const EXPIRY_SWEEP_MS = 10_000

/** Delete the manual decisions whose expiry is at or before `nowMs`; returns how many. */
export async function expireDecisions(db: Kysely<DB>, kind: DatabaseKind, nowMs: number, batch = 500) {
  const expired = (q: Kysely<DB> | Transaction<DB>) =>
    q
      .selectFrom('decisions')
      .select(['scope_id', 'fingerprint'])
      .where('expires_ms', '<=', nowMs)
      // Written so no index serves them: SQLite's planner, without statistics, took the index
      // led by `deleted` (every live decision) over the expiry's (migration 0014).
      .where(sql<number>`deleted + 0`, '=', 0)
      .where(sql<string>`source || ''`, '=', 'manual')
      .orderBy('expires_ms')
  // Most sweeps find nothing: a read first, without the clock's lock, which PostgreSQL refuses to
  // take on a database turned read-only (a standby after a failover): that sweep would fail every
  // ten seconds for as long as it lasts.
  if ((await expired(db).limit(1).executeTakeFirst()) === undefined) return 0
  let total = 0
  for (;;) {
    const n = await db.transaction().execute(async (trx) => {
      await lockDecisionClock(trx, kind)
      const due = await expired(trx).limit(batch).execute()
      if (due.length === 0) return 0
      const first = await tickClock(trx, kind, due.length)
      for (const [i, d] of due.entries()) {
        await tombstoneDecision(trx, d.scope_id, d.fingerprint, first + i, EXPIRY_ACTOR)
        await audit(trx, EXPIRY_ACTOR, 'decision.expire', `${d.scope_id}/${d.fingerprint}`)
      }
      return due.length
    })
    total += n
    if (n < batch) return total
  }
}

/** Run the sweep now and every `EXPIRY_SWEEP_MS`; returns a stop function that waits for a sweep running. */
export function startExpirySweep(
  db: Kysely<DB>,
  kind: DatabaseKind,
  log: Logger,
  metrics?: Pick<AppMetrics, 'counter' | 'gauge'>,
): () => Promise<void> {
  const failures = new RepeatedFailure(log, {
    failed: 'ending expired decisions failed; tried again shortly',
    recovered: 'ending expired decisions works again',
    level: 'warn',
  })
  const job = periodic(
    async () => {
      const n = await expireDecisions(db, kind, Date.now())
      if (n > 0) log.info({ expired: n }, 'expiring decisions ended (deleted: the gates treat them as pending)')
    },
    {
      intervalMs: EXPIRY_SWEEP_MS,
      firstRunMs: 0,
      ...(metrics ? { metrics: { app: metrics, job: 'decision_expiry' } } : {}),
      // Every ten seconds: while the database stays unusable, a line a minute.
      onError: (err) => failures.failed(err),
      onSuccess: () => failures.succeeded(),
    },
  )
  return job.stop
}
