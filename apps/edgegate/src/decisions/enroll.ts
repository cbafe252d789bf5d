/**
 * Enrollment: approve, in one go, the fingerprints a gate has observed that have no decision
 * yet. Rolling out a gate usually starts with a window in which its clients are seen but let
 * through (`sshproxy --allow-unknown`); afterwards those clients are the ones to approve, and
 * a dozen or a thousand of them one command at a time is an afternoon. `--dry-run` lists them
 * first.
 *
 * Only fingerprints without a live decision are approved: an explicit `pending` is someone's
 * choice to wait, and one the gate itself reports as blocked or pending (a verdict given on the
 * gate) is left alone.
 * The write happens under the decision clock's lock and checks each fingerprint again there, so
 * a verdict an administrator gives meanwhile is never overwritten. Each approval is audited.
 */
import type { DatabaseKind } from '@gatehouse/kit/db/database.ts'
import type { Kysely } from 'kysely'
import { audit } from '../admins/store.ts'
import type { DB, NewDecision } from '../db/schema.ts'
import { errors } from '../errors.ts'
import { getNode } from '../nodes/store.ts'
import { listFingerprintsByDecision } from '../observations/store.ts'
import { checkLabel } from './service.ts'
import { getDecision, SCOPE_INSTANCE, tickClock, upsertDecisions } from './store.ts'

/** Verdicts given on the gate itself that an enrollment must not overrule. */
const LOCAL_REFUSALS = ['blocked', 'pending'] as const

export interface Enrollment {
  instanceId: string
  /** Only fingerprints last seen at or after this time (ms). */
  sinceMs?: number
  label: string
  actor: string
  /** At most this many, the most recently seen first. */
  limit: number
  dryRun: boolean
}

export interface Enrolled {
  fingerprint: string
  last_seen_ms: number
}

/** The fingerprints approved (or, in a dry run, those that would be), most recently seen first. */
export async function enrollWaiting(db: Kysely<DB>, kind: DatabaseKind, e: Enrollment): Promise<Enrolled[]> {
  checkLabel(e.label)
  const node = await getNode(db, e.instanceId)
  if (!node || (node.kind !== 'sshgate' && node.kind !== 'tlsgate'))
    throw errors.node_not_found(e.instanceId, node?.kind)
  const waiting = (
    await listFingerprintsByDecision(db, {
      instanceId: e.instanceId,
      status: 'none',
      reportedNot: LOCAL_REFUSALS,
      ...(e.sinceMs !== undefined ? { seenSinceMs: e.sinceMs } : {}),
      limit: e.limit,
      offset: 0,
    })
  ).map((f) => ({ fingerprint: f.fingerprint, last_seen_ms: Number(f.last_seen_ms) }))
  if (e.dryRun || waiting.length === 0) return waiting
  return db.transaction().execute(async (trx) => {
    // The clock first (its lock), then the check: no verdict can land between the two.
    const first = await tickClock(trx, kind, waiting.length)
    const approved: Enrolled[] = []
    const rows: NewDecision[] = []
    for (const f of waiting) {
      if (await getDecision(trx, e.instanceId, f.fingerprint)) continue
      rows.push({
        scope_type: SCOPE_INSTANCE,
        scope_id: e.instanceId,
        fingerprint: f.fingerprint,
        status: 'approved',
        label: e.label,
        updated_us: first + rows.length,
        actor: e.actor,
        source: 'manual',
        expires_ms: null,
        evidence: null,
      })
      approved.push(f)
    }
    // In slices: one statement's parameters stay far below SQLite's and PostgreSQL's limits.
    for (let i = 0; i < rows.length; i += 500) await upsertDecisions(trx, rows.slice(i, i + 500))
    for (const f of approved) await audit(trx, e.actor, 'decision.approved', `${e.instanceId}/${f.fingerprint}`)
    return approved
  })
}
