/**
 * The publication pipeline (spec "Publication of a committed change batch", steps 4-9, and
 * rule 1 for zone create and delete). The caller holds the zone's lock and has done steps
 * 1-3 (revision check, apply in memory, validate). Every path ends with an audit event and
 * the intent record removed; a crash in between is finished by recovery.ts at startup.
 */
import type { Logger } from '@gatehouse/kit'
import type { Kysely } from 'kysely'
import { appendAudit } from '../audit/store.ts'
import type { DB } from '../db/schema.ts'
import { errors } from '../errors.ts'
import { removeFileDurably } from '../files/atomic.ts'
import type { ZoneState } from '../zones/model.ts'
import { deleteZoneRow, insertZoneRow, saveHistory, setZoneRole } from '../zones/store.ts'
import type { Failpoints } from './failpoints.ts'
import type { Journal } from './journal.ts'
import type { KnotAuthority } from './knot-authority.ts'

/** Counters of publication outcomes (dnsctl_publications_total) and their durations. */
export interface PublicationMetrics {
  outcome(action: string, outcome: 'committed' | 'rolled_back', seconds: number): void
}

export interface PipelineDeps {
  metrics?: PublicationMetrics
  /** Prior revisions kept per zone (0: all). */
  historyKeep?: number
  db: Kysely<DB>
  authority: KnotAuthority
  journal: Journal
  failpoints: Failpoints
  log: Logger
  now: () => Date
}

export interface Meta {
  requestId: string
  actor: string
  /** performance.now() when the request arrived, for the duration metric. */
  startedAt?: number
}

function reason(err: unknown): string {
  return (err as Error)?.message ?? String(err)
}

async function audit(
  deps: PipelineDeps,
  meta: Meta,
  zone: string,
  action: string,
  before: string | null,
  after: string | null,
  outcome: 'committed' | 'rolled_back' | 'aborted',
  detail: Record<string, unknown>,
) {
  await appendAudit(deps.db, {
    at: deps.now().toISOString(),
    zone,
    action,
    actor: meta.actor,
    request_id: meta.requestId,
    before_revision: before,
    after_revision: after,
    outcome,
    detail: JSON.stringify(detail),
  })
  if (outcome !== 'aborted' && meta.startedAt !== undefined) {
    deps.metrics?.outcome(action, outcome, (performance.now() - meta.startedAt) / 1000)
  }
}

/** Step 5: the revision about to be replaced goes to the history store. */
function saveCurrent(deps: PipelineDeps, current: ZoneState, meta: Meta, reason: string): Promise<void> {
  return saveHistory(
    deps.db,
    {
      zone: current.name,
      revision: current.revision,
      role: current.role,
      serial: current.serial,
      zone_text: current.text,
      saved_at: deps.now().toISOString(),
      request_id: meta.requestId,
      reason,
    },
    deps.historyKeep,
  )
}

/** Steps 4-9 for a zone Knot already serves: `next` carries the advanced serial. */
export async function publishZone(
  deps: PipelineDeps,
  current: ZoneState,
  next: ZoneState,
  meta: Meta,
  action: 'changes' | 'import',
  detail: Record<string, unknown>,
): Promise<void> {
  const { authority, failpoints, journal } = deps
  // The new zone file is written and fsync'd beside the old one while the intent and the
  // history row are stored (nothing reads it before the rename below): the slowest steps of a
  // small zone's change are these fsyncs, and they need not wait for each other.
  const prepared = authority.prepareZoneFile(current.name, next.text)
  prepared.catch(() => {}) // awaited below; a failure is handled there
  try {
    // The intent comes first: from here on a crash is finished or undone by recovery.ts.
    await journal.begin({
      op: 'publish',
      zone: current.name,
      request_id: meta.requestId,
      actor: meta.actor,
      action,
      before_revision: current.revision,
      after_revision: next.revision,
      before_role: current.role,
      after_role: next.role,
      started_at: deps.now().toISOString(),
    })
    failpoints.hit('publish:after-intent')
    // 5. The prior revision goes to the history store before anything replaces it.
    await saveCurrent(deps, current, meta, action)
    failpoints.hit('publish:after-history')
  } catch (err) {
    await prepared.then((f) => f.discard()).catch(() => {})
    throw err
  }
  try {
    // 6. Put the fsync'd file in place, fsync the folder; then knotd takes the changed records
    // (or the whole file) synchronously.
    await (await prepared).commit()
    failpoints.hit('publish:after-rename')
    const reloaded = await authority.update(current.name, current.zone, next.zone)
    if (reloaded) deps.log.debug({ zone: current.name, why: reloaded }, 'zone reloaded from its file')
    failpoints.hit('publish:after-reload')
    // 7. The authority must answer with the new serial.
    await authority.waitForSerial(current.name, next.serial)
  } catch (err) {
    // 8. Restore the prior zone.
    deps.log.warn({ zone: current.name, err }, 'publication failed; restoring the prior zone')
    await restore(deps, current)
    await audit(deps, meta, current.name, action, current.revision, next.revision, 'rolled_back', {
      ...detail,
      error: reason(err),
    })
    await journal.end(current.name)
    throw errors.publication_failed.with({ cause: err }, current.name, reason(err))
  }
  if (next.role !== current.role) await setZoneRole(deps.db, current.name, next.role)
  // 9. The audit event, then the intent is done.
  await audit(deps, meta, current.name, action, current.revision, next.revision, 'committed', detail)
  failpoints.hit('publish:after-audit')
  await journal.end(current.name)
}

/** Put the prior zone back into Knot's storage and reload it (step 8). */
export async function restore(deps: PipelineDeps, prior: ZoneState): Promise<void> {
  try {
    await deps.authority.writeZoneFile(prior.name, prior.text)
    await deps.authority.knotc.reload(prior.name)
    await deps.authority.waitForSerial(prior.name, prior.serial)
  } catch (err) {
    deps.log.error({ zone: prior.name, err }, 'restoring the prior zone failed; the next reconciliation republishes it')
  }
}

/** Zone create or import of a zone we do not manage yet: file, Knot configuration, verification. */
export async function createZone(deps: PipelineDeps, next: ZoneState, meta: Meta): Promise<void> {
  const { authority, failpoints, journal } = deps
  let knotHad: boolean
  try {
    knotHad = (await authority.knotc.zones()).includes(next.name)
  } catch (err) {
    // knotd does not answer its control socket (stopped, restarting): nothing has changed yet.
    throw errors.publication_failed.with({ cause: err }, next.name, reason(err))
  }
  const priorFile = knotHad ? ((await authority.readZoneFile(next.name)) ?? null) : null
  await journal.begin({
    op: 'create',
    zone: next.name,
    request_id: meta.requestId,
    actor: meta.actor,
    after_revision: next.revision,
    role: next.role,
    knot_had_zone: knotHad,
    prior_file: priorFile,
    started_at: deps.now().toISOString(),
  })
  try {
    await authority.writeZoneFile(next.name, next.text)
    failpoints.hit('create:after-file')
    if (knotHad) await authority.knotc.reload(next.name)
    else await authority.knotc.addZone(next.name)
    failpoints.hit('create:after-conf')
    await authority.waitForSerial(next.name, next.serial)
  } catch (err) {
    deps.log.warn({ zone: next.name, err }, 'zone creation failed; rolling back')
    await undoCreate(deps, next.name, knotHad, priorFile)
    await audit(deps, meta, next.name, 'create', null, next.revision, 'rolled_back', { error: reason(err) })
    await journal.end(next.name)
    throw errors.publication_failed.with({ cause: err }, next.name, reason(err))
  }
  await insertZoneRow(deps.db, { name: next.name, role: next.role, created_at: deps.now().toISOString() })
  await audit(deps, meta, next.name, 'create', null, next.revision, 'committed', { adopted: knotHad })
  await journal.end(next.name)
}

/**
 * Undo a zone creation: take the zone out of Knot's configuration again unless Knot had it
 * before (an adopted zone), and put back the file Knot had, or remove ours.
 */
export async function undoCreate(
  deps: PipelineDeps,
  zone: string,
  knotHadZone: boolean,
  priorFile: string | null,
): Promise<void> {
  const { authority } = deps
  try {
    if (!knotHadZone && (await authority.knotc.zones()).includes(zone)) await authority.knotc.removeZone(zone)
    if (priorFile !== null) {
      await authority.writeZoneFile(zone, priorFile)
      await authority.knotc.reload(zone).catch(() => {})
    } else {
      await removeFileDurably(authority.knotc.zoneFile(zone))
    }
  } catch (err) {
    deps.log.error({ zone, err }, 'rolling back a zone creation failed')
  }
}

/** Zone delete: out of Knot's configuration, verified gone, then the row and the file. */
export async function deleteZone(deps: PipelineDeps, current: ZoneState, meta: Meta): Promise<void> {
  const { authority, failpoints, journal } = deps
  await saveCurrent(deps, current, meta, 'delete')
  await journal.begin({
    op: 'delete',
    zone: current.name,
    request_id: meta.requestId,
    actor: meta.actor,
    before_revision: current.revision,
    started_at: deps.now().toISOString(),
  })
  try {
    await authority.knotc.removeZone(current.name)
    failpoints.hit('delete:after-conf')
    await authority.waitForGone(current.name)
  } catch (err) {
    deps.log.warn({ zone: current.name, err }, 'zone deletion failed; putting the zone back')
    try {
      if (!(await authority.knotc.zones()).includes(current.name)) await authority.knotc.addZone(current.name)
      await authority.waitForSerial(current.name, current.serial)
    } catch (again) {
      deps.log.error({ zone: current.name, err: again }, 'putting the zone back failed')
    }
    await audit(deps, meta, current.name, 'delete', current.revision, null, 'rolled_back', { error: reason(err) })
    await journal.end(current.name)
    throw errors.publication_failed.with({ cause: err }, current.name, reason(err))
  }
  await finishDelete(deps, current.name)
  await audit(deps, meta, current.name, 'delete', current.revision, null, 'committed', {})
  await journal.end(current.name)
}

/** The part of a delete after Knot has let go of the zone (also run by recovery). */
export async function finishDelete(deps: PipelineDeps, zone: string): Promise<void> {
  await deleteZoneRow(deps.db, zone)
  deps.failpoints.hit('delete:after-row')
  await removeFileDurably(deps.authority.knotc.zoneFile(zone))
}
