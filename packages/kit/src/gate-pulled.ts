/**
 * The gates' side of the control-plane sync in their stores: `sync_state` (the acknowledged
 * upload, the policy cursor, the resync mark), and the decisions pulled from the control plane,
 * applied with their expiry and, after a resync, dropped when the control plane no longer holds
 * them. Re-exported by gate-store.ts.
 */
import { type Kysely, sql, type Transaction } from 'kysely'
import type { GateStoreDB, GateVerdict } from './gate-store.ts'
import { parseTimestampMicros } from './timestamps.ts'

type Db = Kysely<GateStoreDB> | Transaction<GateStoreDB>

/** `sync_state` keys of the control-plane sync: the last acknowledged upload and the policy cursor. */
export const UPLOAD_ACK_KEY = 'upload_ack_seq'
export const POLICY_CURSOR_KEY = 'policy_cursor'

export async function getSyncState(db: Db, key: string): Promise<string | undefined> {
  const row = await db.selectFrom('sync_state').select('value').where('key', '=', key).executeTakeFirst()
  return row?.value
}

export async function setSyncState(db: Db, key: string, value: string, now: string): Promise<void> {
  await db
    .insertInto('sync_state')
    .values({ key, value, updated_at: now })
    .onConflict((oc) => oc.column('key').doUpdateSet({ value, updated_at: now }))
    .execute()
}

/**
 * -1, 0 or 1 as `a` is before, equal to or after `b`, as instants: the control plane writes 6
 * fraction digits and the gates 3, so the text does not sort. Text that is not a time sorts first.
 */
export function compareTimes(a: string, b: string): number {
  const [x, y] = [parseTimestampMicros(a) ?? Number.NaN, parseTimestampMicros(b) ?? Number.NaN]
  if (Number.isNaN(x) || Number.isNaN(y)) return Number.isNaN(x) ? (Number.isNaN(y) ? 0 : -1) : 1
  return x < y ? -1 : x > y ? 1 : 0
}

/** A decision pulled from the control plane, in the fields every gate applies. */
export interface PulledDecision {
  fingerprint: string
  status: GateVerdict
  label: string
  updated_at: string
  actor: string
  /** RFC 3339; absent: the decision does not expire. */
  expires_at?: string | undefined
}

/**
 * A pulled decision's expiry as stored: NULL when it has none, or none a gate can read; else UTC
 * with milliseconds and `Z`, as the gate writes its own, so expiries compare as text (the
 * maintenance finds the ones just ended by an index range, kit `markExpiries`).
 */
function expiryOf(d: PulledDecision): string | null {
  if (typeof d.expires_at !== 'string' || parseTimestampMicros(d.expires_at) === undefined) return null
  const ms = Date.parse(d.expires_at)
  return Number.isNaN(ms) ? null : new Date(ms).toISOString()
}

/**
 * Apply pulled decisions in one transaction (all or none). A decision older than the local one
 * is skipped (last writer wins, by instant); unknown fingerprints get an entry with no
 * observations, which the entry cap bounds. Each carries its expiry (`expires_at`). `cursor`,
 * when given, is stored in the same transaction. With `authoritative` (a resync's full pull),
 * the control plane's answer also replaces a verdict pulled earlier that is newer (one its
 * database lost); the gate's own verdicts still win by time. Returns how many entries changed.
 */
export async function applyDecisions<D extends PulledDecision>(
  db: Kysely<GateStoreDB>,
  decisions: readonly D[],
  now: string,
  cursor?: { key: string; value: string },
  authoritative = false,
): Promise<number> {
  return db.transaction().execute(async (trx) => {
    let changed = 0
    for (const d of decisions) {
      const current = await trx
        .selectFrom('fingerprints')
        .select(['decided_at', 'pulled'])
        .where('fingerprint', '=', d.fingerprint)
        .executeTakeFirst()
      const set = {
        verdict: d.status,
        label: d.label,
        decided_at: d.updated_at,
        actor: d.actor,
        pulled: 1,
        expires_at: expiryOf(d),
      }
      if (!current) {
        await trx
          .insertInto('fingerprints')
          .values({
            fingerprint: d.fingerprint,
            ...set,
            first_seen: d.updated_at,
            last_seen: d.updated_at,
            changed_at: now,
          })
          .execute()
        changed++
      } else if (
        current.decided_at === null ||
        (authoritative && current.pulled === 1) ||
        compareTimes(current.decided_at, d.updated_at) <= 0
      ) {
        await trx.updateTable('fingerprints').set(set).where('fingerprint', '=', d.fingerprint).execute()
        changed++
      }
    }
    if (cursor) await setSyncState(trx, cursor.key, cursor.value, now)
    return changed
  })
}

/**
 * The migration both gates run to add `pulled`: rows already there cannot tell where their
 * verdict came from, so they start as the gate's own, and the policy cursor is cleared so the
 * next sync pulls every decision again and marks those the control plane holds.
 */
export async function addVerdictSource(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('fingerprints')
    .addColumn('pulled', 'integer', (c) => c.notNull().defaultTo(0))
    .execute()
  await sql`delete from sync_state where key = ${POLICY_CURSOR_KEY}`.execute(db)
}

/** `sync_state` key: set while a resync's full pull is unfinished, so a restart begins it again. */
export const POLICY_RESYNC_KEY = 'policy_resync'

/**
 * The end of a resync: every verdict pulled earlier that the control plane's full answer does
 * not hold (`listed`) goes back to undecided; the gate's own verdicts stay. Clears the resync mark in the same
 * transaction. Returns the fingerprints reset.
 */
export async function dropUnlistedPulled(
  db: Kysely<GateStoreDB>,
  listed: ReadonlySet<string>,
  now: string,
): Promise<string[]> {
  return db.transaction().execute(async (trx) => {
    const pulled = await trx.selectFrom('fingerprints').select('fingerprint').where('pulled', '=', 1).execute()
    const gone = pulled.map((r) => r.fingerprint).filter((fp) => !listed.has(fp))
    for (let i = 0; i < gone.length; i += 500) {
      await trx
        .updateTable('fingerprints')
        .set({
          verdict: 'pending',
          decided_at: null,
          actor: null,
          label: '',
          pulled: 0,
          expires_at: null,
          changed_at: now,
        })
        .where('fingerprint', 'in', gone.slice(i, i + 500))
        .execute()
    }
    await trx.deleteFrom('sync_state').where('key', '=', POLICY_RESYNC_KEY).execute()
    return gone
  })
}
