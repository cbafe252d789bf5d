/**
 * What a gate (sshproxy, tlsgate) does with a fingerprint, from its store's row: `unknown` when
 * the fingerprint is absent or only observed, the verdict otherwise, and `pending` once a
 * decision's expiry (`expires_at`, sent by the control plane) has passed. The control plane
 * also ends an expiring decision itself (an explicit pending); reading the expiry here ends it on
 * time on a gate that cannot reach the control plane.
 */
import { CompiledQuery, type Kysely, sql, type Transaction } from 'kysely'
import type { Database } from './db/database.ts'
import { memoUntilChange, WalChanges } from './db/wal-changes.ts'
import { type GateStoreDB, type GateVerdict, getSyncState, nextChangeSeq, setSyncState } from './gate-store.ts'

export type GateStatus = 'unknown' | GateVerdict

/** The columns the status depends on. */
export interface GateStatusRow {
  verdict: GateVerdict
  decided_at: string | null
  expires_at: string | null
}

const STATUS_SQL = 'select verdict, decided_at, expires_at from fingerprints where fingerprint = ?'

/** The status a stored row gives at `now` (ms). */
export function gateStatusOf(row: GateStatusRow | undefined, now: number): GateStatus {
  if (!row || (row.verdict === 'pending' && row.decided_at === null)) return 'unknown'
  if (row.expires_at !== null && Date.parse(row.expires_at) <= now) return 'pending'
  return row.verdict
}

/** The status of one fingerprint, read now (the CLI; the gate uses `gateStatusReader`). */
export async function gateStatus(
  db: Kysely<GateStoreDB> | Transaction<GateStoreDB>,
  fingerprint: string,
  now = Date.now(),
): Promise<GateStatus> {
  const { rows } = await db.executeQuery<GateStatusRow>(CompiledQuery.raw(STATUS_SQL, [fingerprint]))
  return gateStatusOf(rows[0], now)
}

/**
 * `gateStatus` for the gate's per-connection lookup: one statement prepared once and run
 * synchronously when the connection is free (`Database.prepare`), so a lookup costs what SQLite
 * costs instead of a Kysely query's round through the driver. It reads committed data only: it
 * waits behind an open transaction like any query. The row is remembered until the database
 * changes in any process (`WalChanges`); the status is worked out per call, as a decision
 * expires with time.
 */
export function gateStatusReader(
  store: Pick<Database<GateStoreDB>, 'prepare' | 'sqlite'>,
): (fingerprint: string, now?: number) => Promise<GateStatus> {
  const query = store.prepare<GateStatusRow>({ compile: () => CompiledQuery.raw(STATUS_SQL, ['']) })
  const first = (fingerprint: string) => query.first(fingerprint)
  const path = store.sqlite?.location()
  const row = path ? memoUntilChange(new WalChanges(path), first) : first
  return async (fingerprint, now = Date.now()) => gateStatusOf(await row(fingerprint), now)
}

/**
 * The verdict as the gates' `list` prints it: `new` until someone decided, `<verdict> until <time>`
 * for an expiring decision, `pending (expired)` after it.
 */
export function verdictText(e: GateStatusRow, now = Date.now()): string {
  if (e.decided_at === null) return 'new'
  if (e.expires_at === null) return e.verdict
  return Date.parse(e.expires_at) <= now ? 'pending (expired)' : `${e.verdict} until ${e.expires_at}`
}

/** Until when expiries have been marked as changes (`markExpiries`), an ISO time. */
export const EXPIRIES_MARKED_KEY = 'expiries_marked_until'

/**
 * Give each entry whose decision expired since the last call (by `now`, an ISO time) a new
 * change sequence, so the next upload reports it as `pending`: an expiry changes what the gate
 * does without a write of its own. Returns how many. The first call marks every expired entry;
 * a call with none to mark writes nothing. Expiries are stored as UTC ISO text (`expiryOf`,
 * `addExpiryIndex`), so this is a range of the expiry index: a full scan took 17 ms of the
 * gate's thread a minute at 100,000 entries.
 */
export async function markExpiries(db: Kysely<GateStoreDB>, now: string): Promise<number> {
  return db.transaction().execute(async (trx) => {
    const since = await getSyncState(trx, EXPIRIES_MARKED_KEY)
    let expired = trx.selectFrom('fingerprints').select('fingerprint').where('expires_at', '<=', now)
    if (since !== undefined) expired = expired.where('expires_at', '>', since)
    if ((await expired.limit(1).executeTakeFirst()) === undefined) return 0
    const seq = await nextChangeSeq(trx)
    let update = trx.updateTable('fingerprints').set({ change_seq: seq }).where('expires_at', '<=', now)
    if (since !== undefined) update = update.where('expires_at', '>', since)
    const marked = await update.executeTakeFirst()
    await setSyncState(trx, EXPIRIES_MARKED_KEY, now, now)
    return Number(marked.numUpdatedRows)
  })
}

/**
 * Migration step for both gates: expiries stored by older versions become UTC ISO text (a
 * control plane may have sent an offset or microseconds), and an index serves `markExpiries`.
 */
export async function addExpiryIndex(db: Kysely<unknown>): Promise<void> {
  await sql`update fingerprints set expires_at = strftime('%Y-%m-%dT%H:%M:%fZ', expires_at)
    where expires_at is not null and strftime('%Y-%m-%dT%H:%M:%fZ', expires_at) is not null`.execute(db)
  await sql`create index fingerprints_expires_at on fingerprints (expires_at) where expires_at is not null`.execute(db)
}
