/**
 * The web enforcement controller's rules (spec "Web enforcement mode"). A pass takes the
 * controller lock (PostgreSQL: a session advisory lock on one pooled connection, released with
 * it also when the process dies), plans every change from what it reads without holding any
 * write lock, then writes in batches of `WRITE_CHUNK`, each one short transaction under the
 * decision clock's lock that first checks every write of the batch still holds (the decision
 * is as planned, the kill switch not engaged meanwhile). Ingest and administrators' verdicts
 * go on between batches. A crash or error leaves whole batches: each committed one complete
 * (blocks with evidence and expiry, revocations as tombstones, its audit entry), the rest
 * untouched, and the next pass plans them again.
 *
 * - A candidate the shadow policy scores would_block, on a covered TLS gate (canary: listed
 *   and active; enforce: every active tlsgate), gets an expiring instance-scoped block with
 *   its source, expiry and aggregate evidence.
 * - A block is written again (renewed) only when the evidence is newer than the evidence of
 *   the previous automated block of the pair, live or revoked.
 * - A manual decision (any verdict) is never overwritten; tombstones of deleted manual
 *   decisions do not count as decisions.
 * - Automated blocks that expired, whose gate is no longer covered, or all of them when the
 *   effective mode is disabled (flag or kill switch), become explicit pending decisions that
 *   gates pull.
 */
import type { DatabaseKind } from '@gatehouse/kit'
import type { Kysely } from 'kysely'
import { audit } from '../admins/store.ts'
import type { DB, DecisionRow, NewDecision } from '../db/schema.ts'
import { decisionsFor, SCOPE_INSTANCE, tickClock, upsertDecisions } from '../decisions/store.ts'
import { listNodes } from '../nodes/store.ts'
import {
  AUTOMATED_SOURCE,
  CONTROLLER_ACTOR,
  type Evidence,
  type ShadowPolicy,
  shadowVerdict,
} from '../web/candidates.ts'
import { buildReport } from '../web/service.ts'
import {
  automatedBlocks,
  lockDecisionClock,
  type Revocation,
  readState,
  revokeBlocks,
  WRITE_CHUNK,
  withControllerLock,
  writeState,
} from './store.ts'

export type EnforcementMode = 'disabled' | 'canary' | 'enforce'

export interface EnforcementSettings {
  mode: EnforcementMode
  canaryNodes: readonly string[]
  /** Evidence interval of a pass, ending at the pass's time. */
  windowMs: number
  policy: ShadowPolicy
}

export interface PassResult {
  ran: boolean
  mode: EnforcementMode
  blocked: number
  renewed: number
  revoked: number
}

/** Test seam: called before each planned write (a throw simulates a crash mid-pass). */
export interface PassHooks {
  /** Called (and awaited) before each batch of writes with the index of its first write. */
  beforeWrite?: (index: number) => void | Promise<void>
  /** Writes per statement (default WRITE_CHUNK). */
  chunkSize?: number
}

/** What the controller keeps in `decisions.evidence` (JSON): aggregates only, never a request target. */
export interface StoredEvidence extends Omit<Evidence, 'first_ms' | 'last_ms'> {
  first_at: string
  last_at: string
  last_ms: number
  reasons: string[]
}

/** A planned write; `expectUs` is the `updated_us` of the decision it was planned against (null: none). */
type Write = { instance: string; fingerprint: string; expectUs: number | null } & (
  | { type: 'block' | 'renew'; evidence: StoredEvidence; expiresMs: number }
  | { type: 'revoke'; why: string }
)

function previousEvidenceMs(d: DecisionRow | undefined): number {
  if (!d || d.source !== AUTOMATED_SOURCE || d.evidence === null) return Number.NEGATIVE_INFINITY
  try {
    const e = JSON.parse(d.evidence) as { last_ms?: unknown }
    return typeof e.last_ms === 'number' ? e.last_ms : Number.NEGATIVE_INFINITY
  } catch {
    return Number.NEGATIVE_INFINITY
  }
}

/**
 * Which TLS gates a mode covers: enforce every active `tlsgate`, canary the active ones listed,
 * disabled none.
 */
export async function coverage(
  db: Kysely<DB>,
  mode: EnforcementMode,
  canaryNodes: readonly string[],
): Promise<(gate: string) => boolean> {
  if (mode === 'disabled') return () => false
  const gates = new Set(
    (await listNodes(db, ['tlsgate'])).filter((n) => Number(n.active) === 1).map((n) => n.instance_id),
  )
  const canary = new Set(canaryNodes)
  return (gate) => gates.has(gate) && (mode === 'enforce' || canary.has(gate))
}

/** The mode in force: the kill switch overrides the configured mode. */
export async function effectiveMode(db: Kysely<DB>, configured: EnforcementMode): Promise<EnforcementMode> {
  return (await readState(db)).killSwitch ? 'disabled' : configured
}

export async function runPass(
  db: Kysely<DB>,
  kind: DatabaseKind,
  s: EnforcementSettings,
  nowMs: number,
  hooks: PassHooks = {},
): Promise<PassResult> {
  const result: PassResult = { ran: false, mode: s.mode, blocked: 0, renewed: 0, revoked: 0 }
  const ran = await withControllerLock(db, kind, async (conn) => {
    const { mode, writes } = await planPass(conn, kind, s, nowMs)
    result.mode = mode
    const chunk = hooks.chunkSize ?? WRITE_CHUNK
    for (let i = 0; i < writes.length; i += chunk) {
      await hooks.beforeWrite?.(i)
      const done = await writeBatch(conn, kind, writes.slice(i, i + chunk), mode, nowMs)
      result.blocked += done.blocked
      result.renewed += done.renewed
      result.revoked += done.revoked
    }
  })
  result.ran = ran
  return result
}

/**
 * Plan a pass without holding any write lock: the candidates of the window, the decisions of
 * the pairs and the live automated blocks, as read now. Each planned write remembers the
 * decision it was planned against (`expectUs`), so its batch can tell whether it still holds.
 */
async function planPass(
  db: Kysely<DB>,
  kind: DatabaseKind,
  s: EnforcementSettings,
  nowMs: number,
): Promise<{ mode: EnforcementMode; writes: Write[] }> {
  const mode: EnforcementMode = (await readState(db)).killSwitch ? 'disabled' : s.mode
  const covered = await coverage(db, mode, s.canaryNodes)
  const writes: Write[] = []
  const keep = new Set<string>()
  if (mode !== 'disabled') {
    const report = await buildReport(
      db,
      kind,
      { fromMs: nowMs - s.windowMs, toMs: nowMs, windowMs: s.windowMs },
      { ...s.policy, enabled: false },
      nowMs,
      Number.POSITIVE_INFINITY,
      false, // the pass reads decisions itself, tombstones included
    )
    const eligible = report.candidates.filter(
      (c) => covered(c.instance_id) && shadowVerdict(c.evidence, undefined, s.policy, nowMs).status === 'would_block',
    )
    const rows = await decisionsFor(db, eligible, { tombstones: true })
    for (const c of eligible) {
      const key = `${c.instance_id}/${c.fingerprint}`
      const d = rows.get(key)
      const live = d !== undefined && Number(d.deleted) === 0
      if (live && d.source !== AUTOMATED_SOURCE) continue // manual decisions always win
      const liveBlock = live && d.status === 'blocked'
      if (c.evidence.last_ms <= previousEvidenceMs(d)) {
        if (liveBlock) keep.add(key)
        continue // no evidence newer than the previous block
      }
      const { first_ms, last_ms, ...rest } = c.evidence
      writes.push({
        type: liveBlock ? 'renew' : 'block',
        instance: c.instance_id,
        fingerprint: c.fingerprint,
        expectUs: d === undefined ? null : Number(d.updated_us),
        expiresMs: nowMs + s.policy.proposedTtlMs,
        evidence: {
          ...rest,
          first_at: new Date(first_ms).toISOString(),
          last_at: new Date(last_ms).toISOString(),
          last_ms,
          reasons: shadowVerdict(c.evidence, undefined, s.policy, nowMs).reasons,
        },
      })
      keep.add(key)
    }
  }
  for (const d of await automatedBlocks(db)) {
    const key = `${d.scope_id}/${d.fingerprint}`
    if (keep.has(key)) continue
    const why =
      mode === 'disabled'
        ? 'web enforcement disabled'
        : !covered(d.scope_id)
          ? 'gate not covered by web enforcement'
          : d.expires_ms === null || Number(d.expires_ms) <= nowMs
            ? 'automated block expired'
            : undefined
    if (why) {
      writes.push({
        type: 'revoke',
        instance: d.scope_id,
        fingerprint: d.fingerprint,
        expectUs: Number(d.updated_us),
        why,
      })
    }
  }
  return { mode, writes }
}

/**
 * Write one batch of planned writes in one short transaction, under the decision clock's lock
 * (PostgreSQL row lock; SQLite's write lock): a write whose decision changed since it was
 * planned (an administrator's verdict, the kill switch's revocation, another process) is
 * dropped, and so is every block once the kill switch is engaged; the rest get consecutive
 * clock times and one audit entry with the batch.
 */
async function writeBatch(
  db: Kysely<DB>,
  kind: DatabaseKind,
  planned: Write[],
  mode: EnforcementMode,
  nowMs: number,
): Promise<Omit<PassResult, 'ran' | 'mode'>> {
  return db.transaction().execute(async (trx) => {
    const done = { blocked: 0, renewed: 0, revoked: 0 }
    await lockDecisionClock(trx, kind)
    const killed = (await readState(trx)).killSwitch
    const current = await decisionsFor(
      trx,
      planned.map((w) => ({ instance_id: w.instance, fingerprint: w.fingerprint })),
      { tombstones: true },
    )
    const writes = planned.filter((w) => {
      if (killed && w.type !== 'revoke') return false
      const d = current.get(`${w.instance}/${w.fingerprint}`)
      return (d === undefined ? null : Number(d.updated_us)) === w.expectUs
    })
    if (writes.length === 0) return done
    const first = await tickClock(trx, kind, writes.length, nowMs * 1000)
    const blocks: NewDecision[] = []
    const revocations: Revocation[] = []
    writes.forEach((w, j) => {
      const at = first + j
      if (w.type === 'revoke') {
        revocations.push({ scope_id: w.instance, fingerprint: w.fingerprint, atUs: at, label: w.why })
        return
      }
      blocks.push({
        scope_type: SCOPE_INSTANCE,
        scope_id: w.instance,
        fingerprint: w.fingerprint,
        status: 'blocked',
        label: 'automated: web scanner evidence',
        updated_us: at,
        actor: CONTROLLER_ACTOR,
        source: AUTOMATED_SOURCE,
        expires_ms: w.expiresMs,
        evidence: JSON.stringify(w.evidence),
      })
      if (w.type === 'block') done.blocked++
      else done.renewed++
    })
    await upsertDecisions(trx, blocks)
    done.revoked = await revokeBlocks(trx, revocations)
    await audit(
      trx,
      CONTROLLER_ACTOR,
      'web_enforcement.pass',
      `mode=${mode} blocked=${done.blocked} renewed=${done.renewed} revoked=${done.revoked}`,
      nowMs,
    )
    return done
  })
}

/**
 * The runtime kill switch (administrators, audited). Engaging it revokes every automated block
 * in the same transaction, so gates drop them on their next pull even before a controller pass;
 * while engaged, passes create nothing. Releasing it returns to the configured mode.
 */
export async function setKillSwitch(
  db: Kysely<DB>,
  kind: DatabaseKind,
  engaged: boolean,
  actor: string,
  nowMs = Date.now(),
): Promise<{ revoked: number }> {
  return db.transaction().execute(async (trx) => {
    await lockDecisionClock(trx, kind)
    await writeState(trx, engaged, actor, nowMs)
    await audit(
      trx,
      actor,
      engaged ? 'web_enforcement.kill_switch.engage' : 'web_enforcement.kill_switch.release',
      'web_enforcement',
      nowMs,
    )
    if (!engaged) return { revoked: 0 }
    const blocks = await automatedBlocks(trx)
    if (blocks.length === 0) return { revoked: 0 }
    const first = await tickClock(trx, kind, blocks.length, nowMs * 1000)
    let revoked = 0
    for (let i = 0; i < blocks.length; i += WRITE_CHUNK) {
      revoked += await revokeBlocks(
        trx,
        blocks.slice(i, i + WRITE_CHUNK).map((d, j) => ({
          scope_id: d.scope_id,
          fingerprint: d.fingerprint,
          atUs: first + i + j,
          label: 'kill switch engaged',
        })),
      )
    }
    return { revoked }
  })
}
