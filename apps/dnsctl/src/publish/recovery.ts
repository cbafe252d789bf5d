/**
 * Startup recovery: finish or undo whatever a previous run left in the journal, so that
 * the zone file, Knot and the API's view agree and the history and audit stay complete.
 *
 * - publish: if the zone file holds the new revision, the publication reached disk: make Knot
 *   serve it and record it as committed (or restore the prior zone when Knot refuses it).
 *   Otherwise the old file is still in place: make Knot serve it and record the batch aborted.
 * - create: committed once the zone row exists; otherwise the creation is undone.
 * - delete: the decision was made and the prior revision is in history: finish it.
 */
import { appendAudit, hasAuditFor } from '../audit/store.ts'
import { parseZone } from '../zonefile/index.ts'
import { type Role, revisionOf, stateOf, type ZoneState } from '../zones/model.ts'
import { findHistory, listZoneRows, setZoneRole } from '../zones/store.ts'
import type { Intent } from './journal.ts'
import { finishDelete, type PipelineDeps, restore, undoCreate } from './pipeline.ts'

async function auditOnce(
  deps: PipelineDeps,
  intent: Intent,
  action: string,
  before: string | null,
  after: string | null,
  outcome: 'committed' | 'rolled_back' | 'aborted',
) {
  if (await hasAuditFor(deps.db, intent.request_id, intent.zone)) return
  await appendAudit(deps.db, {
    at: deps.now().toISOString(),
    zone: intent.zone,
    action,
    actor: intent.actor,
    request_id: intent.request_id,
    before_revision: before,
    after_revision: after,
    outcome,
    detail: JSON.stringify({ recovered: true, interrupted_at: intent.started_at }),
  })
}

function fileRevision(text: string | undefined, zone: string, role: Role): string | undefined {
  if (text === undefined) return undefined
  try {
    parseZone(text, { origin: zone })
    return revisionOf(role, text)
  } catch {
    return undefined
  }
}

async function priorState(deps: PipelineDeps, zone: string, revision: string): Promise<ZoneState | undefined> {
  const row = await findHistory(deps.db, zone, revision)
  if (!row) return undefined
  return stateOf(zone, row.role, parseZone(row.zone_text, { origin: zone }))
}

export async function recover(deps: PipelineDeps, intents: Intent[]): Promise<void> {
  const { authority, log } = deps
  for (const intent of intents) {
    log.warn(
      { zone: intent.zone, op: intent.op, request_id: intent.request_id },
      'recovering an interrupted publication',
    )
    if (intent.op === 'publish') {
      const text = await authority.readZoneFile(intent.zone)
      const prior = await priorState(deps, intent.zone, intent.before_revision)
      if (fileRevision(text, intent.zone, intent.after_role) === intent.after_revision) {
        const next = stateOf(intent.zone, intent.after_role, parseZone(text!, { origin: intent.zone }))
        try {
          await authority.knotc.reload(intent.zone)
          await authority.waitForSerial(intent.zone, next.serial)
          if (intent.after_role !== intent.before_role) await setZoneRole(deps.db, intent.zone, intent.after_role)
          await auditOnce(deps, intent, intent.action, intent.before_revision, intent.after_revision, 'committed')
        } catch (err) {
          log.warn({ zone: intent.zone, err }, 'the interrupted publication does not verify; restoring the prior zone')
          if (prior) await restore(deps, prior)
          await auditOnce(deps, intent, intent.action, intent.before_revision, intent.after_revision, 'rolled_back')
        }
      } else {
        // The rename never happened (or the file is unreadable): the prior zone is the truth.
        if (prior && fileRevision(text, intent.zone, intent.before_role) !== intent.before_revision) {
          await authority.writeZoneFile(intent.zone, prior.text)
        }
        await authority.knotc.reload(intent.zone).catch((err) => log.error({ err }, 'reload failed'))
        await auditOnce(deps, intent, intent.action, intent.before_revision, intent.after_revision, 'aborted')
      }
    } else if (intent.op === 'create') {
      const rows = await listZoneRows(deps.db)
      if (rows.some((r) => r.name === intent.zone)) {
        await auditOnce(deps, intent, 'create', null, intent.after_revision, 'committed')
      } else {
        await undoCreate(deps, intent.zone, intent.knot_had_zone, intent.prior_file)
        await auditOnce(deps, intent, 'create', null, intent.after_revision, 'aborted')
      }
    } else {
      if ((await authority.knotc.zones()).includes(intent.zone)) await authority.knotc.removeZone(intent.zone)
      await finishDelete(deps, intent.zone)
      await auditOnce(deps, intent, 'delete', intent.before_revision, null, 'committed')
    }
    await deps.journal.end(intent.zone)
  }
}
