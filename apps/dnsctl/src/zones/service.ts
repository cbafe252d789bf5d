/**
 * Zone rules: the API's view of every managed zone (held in memory, loaded from Knot's
 * zone files at startup), revision checks, dry runs, and the calls into the publication
 * pipeline under a per-zone lock.
 */
import { mkdirPrivate, StartupError } from '@gatehouse/kit'
import { appendAudit, listAudit } from '../audit/store.ts'
import { errors } from '../errors.ts'
import { removeLeftoverTemps } from '../files/atomic.ts'
import { KeyedMutex } from '../publish/mutex.ts'
import type { Notifier } from '../publish/notifier.ts'
import { createZone, deleteZone, type Meta, type PipelineDeps, publishZone } from '../publish/pipeline.ts'
import { recover } from '../publish/recovery.ts'
import { parseZone, soaFields } from '../zonefile/index.ts'
import { applyChanges, type RRsetChange } from './changes.ts'
import { diffZones, type ZoneDiff } from './diff.ts'
import {
  nextSerial,
  parseZoneText,
  type Role,
  sameRecordsBesidesSerial,
  stateOf,
  withSerial,
  type ZoneState,
} from './model.ts'
import { deleteZoneRow, findHistory, insertZoneRow, listHistory, listZoneRows } from './store.ts'

/** One page of a newest-first listing: at most `limit` rows with ids below `before`. */
export interface Page {
  limit: number
  before?: number | undefined
}

export interface ServiceDeps extends PipelineDeps {
  notifier: Notifier
}

function checkRevision(what: string, expected: string | undefined, current: ZoneState) {
  if (expected === undefined) throw errors.revision_required(what)
  if (expected !== current.revision) throw errors.revision_mismatch(expected, current.revision)
}

export interface ChangeResult {
  before: ZoneState
  /** The new revision (the current one for a dry run). */
  revision: string
  serial: number
  records: number
  dryRun: boolean
  /** False when the batch leaves the zone as it is: nothing is (or would be) published. */
  changed: boolean
  /** Dry runs: the records the batch would add and remove (SOA serial included). */
  diff?: ZoneDiff
}

export interface PutResult {
  state: ZoneState
  created: boolean
  dryRun: boolean
  /** False when the zone text and role are the ones the zone has: nothing is (or would be) published. */
  changed: boolean
  warnings: string[]
  /** Dry runs: the records the import would add and remove. */
  diff?: ZoneDiff
}

export class ZoneService {
  readonly deps: ServiceDeps
  readonly #zones = new Map<string, ZoneState>()
  readonly #locks = new KeyedMutex()

  constructor(deps: ServiceDeps) {
    this.deps = deps
  }

  /** Finish interrupted publications, then load every zone and make Knot serve it. */
  async start(): Promise<void> {
    const { authority, journal } = this.deps
    await mkdirPrivate(journal.dir)
    await removeLeftoverTemps(authority.knotc.options.zonesDir)
    await removeLeftoverTemps(journal.dir)
    await recover(this.deps, await journal.pending())
    for (const row of await listZoneRows(this.deps.db)) {
      const text = await authority.readZoneFile(row.name)
      if (text === undefined) {
        throw new StartupError(`zone ${row.name}: its file ${authority.knotc.zoneFile(row.name)} is missing`)
      }
      try {
        this.#zones.set(row.name, stateOf(row.name, row.role, parseZone(text, { origin: row.name })))
      } catch (err) {
        throw new StartupError(`zone ${row.name}: its file does not parse: ${(err as Error).message}`)
      }
    }
    await this.reconcile()
  }

  /**
   * Make knotd serve every managed zone at its serial: zones added at runtime live only in
   * knotd's running configuration and are gone after a knotd restart, and a failed restore can
   * leave another file behind. Runs at startup and periodically (--reconcile-interval).
   * Returns the zones it had to repair.
   */
  async reconcile(): Promise<string[]> {
    const { authority, log } = this.deps
    const knotZones = new Set(await authority.knotc.zones())
    const repaired: string[] = []
    for (const name of [...this.#zones.keys()]) {
      await this.#locks.run(name, async () => {
        const state = this.#zones.get(name)
        if (!state) return
        if (!knotZones.has(name)) {
          log.warn({ zone: name }, 'knotd does not have the zone configured; adding it')
          await authority.knotc.addZone(name)
          repaired.push(name)
        } else if ((await authority.servedSerial(name).catch(() => undefined)) !== state.serial) {
          // The API's view is the truth (a failed restore may have left another file behind).
          log.warn({ zone: name }, 'knotd serves another serial than the managed zone; republishing it')
          if ((await authority.readZoneFile(name)) !== state.text) await authority.writeZoneFile(name, state.text)
          await authority.knotc.reload(name)
          repaired.push(name)
        } else return
        await authority.waitForSerial(name, state.serial)
      })
    }
    return repaired
  }

  async stop(): Promise<void> {
    await this.#locks.drain()
  }

  /** Prior revisions of a zone (also of a deleted one), newest first, without their text. */
  history(name: string, page: Page) {
    return listHistory(this.deps.db, name, page)
  }

  /** One prior revision with its zone text (the newest one, if the zone returned to it). */
  async historyEntry(name: string, revision: string) {
    const entry = await findHistory(this.deps.db, name, revision)
    if (!entry) throw errors.revision_not_in_history(name, revision)
    return entry
  }

  /** Audit events of a zone (also of a deleted one), newest first. */
  audit(name: string, page: Page) {
    return listAudit(this.deps.db, name, page)
  }

  list(): ZoneState[] {
    return [...this.#zones.values()].sort((a, b) => (a.name < b.name ? -1 : 1))
  }

  get(name: string): ZoneState {
    const state = this.#zones.get(name)
    if (!state) throw errors.zone_not_found(name)
    return state
  }

  /** PUT /v1/zones/{zone}: create, or import over an existing zone (which needs its revision). */
  async put(
    name: string,
    input: { role: Role; zone_text: string; dry_run: boolean },
    expected: string | undefined,
    meta: Meta,
  ): Promise<PutResult> {
    const parsed = parseZoneText(name, input.zone_text)
    return this.#locks.run(name, async () => {
      const current = this.#zones.get(name)
      if (!current) {
        if (expected !== undefined) throw errors.revision_mismatch(expected, '(none: the zone does not exist)')
        const state = stateOf(name, input.role, parsed)
        if (input.dry_run)
          return {
            state,
            created: true,
            dryRun: true,
            changed: true,
            warnings: [],
            diff: diffZones(undefined, state.zone),
          }
        await createZone(this.deps, state, meta)
        this.#zones.set(name, state)
        const warnings = await this.deps.notifier.notify(name)
        return { state, created: true, dryRun: false, changed: true, warnings }
      }
      checkRevision(`replacing zone ${name}`, expected, current)
      // An import re-run from a config repository with nothing changed (octoDNS says "No
      // changes") must not move the serial: that would add a history row, an audit event and a
      // knotd reload, and every secondary would be notified and transfer the same data again. A
      // given serial alone is no change: the serial is dnsctl's to advance.
      if (input.role === current.role && sameRecordsBesidesSerial(current.zone, parsed)) {
        return {
          state: current,
          created: false,
          dryRun: input.dry_run,
          changed: false,
          warnings: [],
          ...(input.dry_run ? { diff: diffZones(current.zone, current.zone) } : {}),
        }
      }
      const next = stateOf(
        name,
        input.role,
        withSerial(parsed, nextSerial(current.serial, soaFields(parsed.records[0]!.rdata).serial)),
      )
      if (input.dry_run)
        return {
          state: next,
          created: false,
          dryRun: true,
          changed: true,
          warnings: [],
          diff: diffZones(current.zone, next.zone),
        }
      await publishZone(this.deps, current, next, meta, 'import', { role: input.role })
      this.#zones.set(name, next)
      return { state: next, created: false, dryRun: false, changed: true, warnings: [] }
    })
  }

  /**
   * HA promotion: take over a zone knotd already serves (transferred from the old primary) as a
   * managed primary zone: its file, its row and an audit event; knotd keeps serving throughout.
   */
  async adopt(state: ZoneState, meta: Meta): Promise<void> {
    await this.#locks.run(state.name, async () => {
      const { authority, db } = this.deps
      await authority.writeZoneFile(state.name, state.text)
      await insertZoneRow(db, { name: state.name, role: state.role, created_at: this.deps.now().toISOString() })
      await appendAudit(db, {
        at: this.deps.now().toISOString(),
        zone: state.name,
        action: 'promote',
        actor: meta.actor,
        request_id: meta.requestId,
        before_revision: this.#zones.get(state.name)?.revision ?? null,
        after_revision: state.revision,
        outcome: 'committed',
        detail: JSON.stringify({ serial: state.serial, records: state.zone.records.length }),
      })
      this.#zones.set(state.name, state)
    })
  }

  /**
   * HA demotion: stop managing a zone without touching knotd (which goes on serving it, now
   * transferred from the new primary). Its history and audit stay.
   */
  async release(name: string, meta: Meta): Promise<void> {
    await this.#locks.run(name, async () => {
      const current = this.#zones.get(name)
      if (!current) return
      await deleteZoneRow(this.deps.db, name)
      await appendAudit(this.deps.db, {
        at: this.deps.now().toISOString(),
        zone: name,
        action: 'demote',
        actor: meta.actor,
        request_id: meta.requestId,
        before_revision: current.revision,
        after_revision: null,
        outcome: 'committed',
        detail: JSON.stringify({ serial: current.serial }),
      })
      this.#zones.delete(name)
    })
  }

  /** DELETE /v1/zones/{zone}: needs the exact revision, also for secondary zones. */
  async remove(name: string, expected: string | undefined, meta: Meta): Promise<{ warnings: string[] }> {
    return this.#locks.run(name, async () => {
      const current = this.get(name)
      checkRevision(`deleting zone ${name}`, expected, current)
      await deleteZone(this.deps, current, meta)
      this.#zones.delete(name)
      return { warnings: await this.deps.notifier.notify(name) }
    })
  }

  /** POST /v1/zones/{zone}/changes: steps 1-3 here, 4-9 in the pipeline. */
  async change(
    name: string,
    input: { changes: RRsetChange[]; dry_run: boolean },
    expected: string | undefined,
    meta: Meta,
  ): Promise<ChangeResult> {
    return this.#locks.run(name, async () => {
      const current = this.get(name)
      // 1. Check the expected revision.
      checkRevision(`changing zone ${name}`, expected, current)
      if (current.role === 'secondary') throw errors.zone_is_secondary(name)
      // 2 and 3. Apply in memory and validate the complete zone.
      const applied = applyChanges(current.zone, input.changes)
      // A batch that leaves the zone as it is (an upsert of the records an RRset already has)
      // commits nothing, for the same reasons as an unchanged import.
      if (sameRecordsBesidesSerial(current.zone, applied)) {
        return {
          before: current,
          revision: current.revision,
          serial: current.serial,
          records: applied.records.length,
          dryRun: input.dry_run,
          changed: false,
          ...(input.dry_run ? { diff: diffZones(current.zone, current.zone) } : {}),
        }
      }
      // 4. Advance the SOA serial once.
      const serial = nextSerial(current.serial)
      // A dry run stops here: rendering and hashing the new zone would only cost time.
      if (input.dry_run)
        return {
          before: current,
          revision: current.revision,
          serial,
          records: applied.records.length,
          dryRun: true,
          changed: true,
          diff: diffZones(current.zone, withSerial(applied, serial)),
        }
      const next = stateOf(name, current.role, withSerial(applied, serial))
      await publishZone(this.deps, current, next, meta, 'changes', {
        changes: input.changes.map((c) => ({ action: c.action, name: c.name, type: c.type })),
      })
      this.#zones.set(name, next)
      return {
        before: current,
        revision: next.revision,
        serial,
        records: applied.records.length,
        dryRun: false,
        changed: true,
      }
    })
  }
}
