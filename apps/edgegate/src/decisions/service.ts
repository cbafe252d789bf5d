/** Decision rules: the spec's verdict transitions (approve, block, pending, label, delete). */
import type { DatabaseKind } from '@gatehouse/kit/db/url.ts'
import { parseDecisionExpiry } from '@gatehouse/kit/edge-limits.ts'
import type { Decision, Verdict } from '@gatehouse/kit/edge-wire.ts'
import { hasControlCharacter } from '@gatehouse/kit/terminal.ts'
import type { Kysely } from 'kysely'
import { audit } from '../admins/store.ts'
import type { DB, DecisionRow, NewDecision } from '../db/schema.ts'
import { errors } from '../errors.ts'
import { getNode } from '../nodes/store.ts'
import { formatMicros, formatMillis } from '../timestamps.ts'
import { decisionFingerprint, lookupFingerprint } from './fingerprints.ts'
import { getDecision, SCOPE_INSTANCE, tickClock, tombstoneDecision, upsertDecision } from './store.ts'

/** Longest label, in characters (the API schema says the same). */
export const MAX_LABEL = 256

/** A stored decision on the wire; an expiring one carries `expires_at` (the gates honour it). */
export function toDecision(
  row: Pick<DecisionRow, 'scope_id' | 'fingerprint' | 'status' | 'label' | 'updated_us' | 'actor'> & {
    expires_ms?: number | null
  },
): Decision {
  const d: Decision = {
    scope_type: 'instance',
    scope_id: row.scope_id,
    fingerprint: row.fingerprint,
    status: row.status,
    label: row.label,
    updated_at: formatMicros(Number(row.updated_us)),
    actor: row.actor,
  }
  if (row.expires_ms != null) d.expires_at = formatMillis(Number(row.expires_ms))
  return d
}

export interface DecisionChange {
  instanceId: string
  fingerprint: string
  /** New verdict; absent for a label-only change. */
  status?: Verdict
  /** New label; absent keeps the current one. */
  label?: string
  /**
   * The decision ends this long from now (the expiry sweep then deletes it: the fingerprint is
   * undecided again). Absent: a new status is permanent, a label-only change keeps the expiry.
   */
  expiresInMs?: number
  actor: string
}

/** `4h` to milliseconds, or the invalid_expiry error (the API's and the CLI's rule, the gates' too). */
export function parseExpiry(text: string): number {
  const ms = parseDecisionExpiry(text)
  if (ms === undefined) throw errors.invalid_expiry(text)
  return ms
}

/**
 * Refuse a label too long, or one a terminal would interpret: labels sync to the gates and are
 * printed by their CLIs (`sshproxy list`). One place, for the API, the CLI and the dashboard.
 */
export function checkLabel(label: string): void {
  if (label.length > MAX_LABEL) throw errors.label_too_long(MAX_LABEL)
  if (hasControlCharacter(label)) throw errors.label_invalid()
}

/**
 * Apply a change: a status moves any entry (or none, or a tombstone) to that status; a label
 * alone replaces the label of an existing live decision. Either way the decision gets a new
 * clock time, so gates pull it.
 */
export async function changeDecision(db: Kysely<DB>, kind: DatabaseKind, c: DecisionChange): Promise<Decision> {
  if (c.status === undefined && c.label === undefined && c.expiresInMs === undefined)
    throw errors.decision_missing_fields()
  if (c.label !== undefined) checkLabel(c.label)
  const node = await getNode(db, c.instanceId)
  if (!node || (node.kind !== 'sshgate' && node.kind !== 'tlsgate'))
    throw errors.node_not_found(c.instanceId, node?.kind)
  // A verdict is stored under the fingerprint as the gate computes it; a label or expiry alone
  // changes an existing decision, found by that form or, for a row from before the check, as written.
  const fingerprint =
    c.status !== undefined
      ? decisionFingerprint(c.instanceId, node.kind, c.fingerprint)
      : lookupFingerprint(node.kind, c.fingerprint)
  return db.transaction().execute(async (trx) => {
    const at = await tickClock(trx, kind)
    let found = fingerprint
    let existing = await getDecision(trx, c.instanceId, found)
    if (!existing && c.status === undefined && found !== c.fingerprint) {
      found = c.fingerprint
      existing = await getDecision(trx, c.instanceId, found)
    }
    if (!existing && c.status === undefined) throw errors.decision_not_found(c.instanceId, c.fingerprint)
    const row: NewDecision = {
      scope_type: SCOPE_INSTANCE,
      scope_id: c.instanceId,
      fingerprint: found,
      status: c.status ?? existing!.status,
      label: c.label ?? existing?.label ?? '',
      updated_us: at,
      actor: c.actor,
      source: 'manual',
      expires_ms:
        c.expiresInMs !== undefined
          ? Date.now() + c.expiresInMs
          : c.status === undefined
            ? (existing?.expires_ms ?? null)
            : null,
      evidence: null,
    }
    await upsertDecision(trx, row)
    const action = c.status ? `decision.${c.status}` : c.label !== undefined ? 'decision.label' : 'decision.expiry'
    const until = row.expires_ms == null ? '' : ` until ${formatMillis(Number(row.expires_ms))}`
    await audit(trx, c.actor, action, `${c.instanceId}/${found}${until}`)
    return toDecision(row)
  })
}

/**
 * Delete a decision. Administration treats it as absent from now on, but the row stays as a
 * tombstone with a fresh clock time, which the policy serves as an explicit `pending` (empty
 * label, the deleter as actor): gates that pulled the old verdict fall back to pending
 * (fail closed) instead of keeping, say, an approval forever.
 */
export async function removeDecision(
  db: Kysely<DB>,
  kind: DatabaseKind,
  instanceId: string,
  fingerprint: string,
  actor: string,
) {
  const node = await getNode(db, instanceId)
  // Found by the gate's form of the fingerprint (`2EDB…` deletes `2edb…`), else as written: a
  // row from before decisions were checked.
  const forms = [...new Set([node ? lookupFingerprint(node.kind, fingerprint) : fingerprint, fingerprint])]
  await db.transaction().execute(async (trx) => {
    // Clock first, like every decision write: the same lock order, and the time is unique.
    const at = await tickClock(trx, kind)
    for (const fp of forms) {
      if (await tombstoneDecision(trx, instanceId, fp, at, actor)) {
        await audit(trx, actor, 'decision.delete', `${instanceId}/${fp}`)
        return
      }
    }
    throw errors.decision_not_found(instanceId, fingerprint)
  })
}
