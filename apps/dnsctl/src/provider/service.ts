/**
 * The external provider endpoints' rules: the allowlist, records with a synthetic revision,
 * plans that write nothing, and changes: re-read and compare the revision, the safety guard,
 * one batch request, verification of the API state (the re-plan must be empty), a compensating
 * rollback when that fails, verification at the assigned nameservers (lag is a warning), and an
 * audit event for every outcome (zone `extdns:<zone>`).
 */
import type { Logger } from '@gatehouse/kit'
import type { Kysely } from 'kysely'
import { appendAudit } from '../audit/store.ts'
import type { Config } from '../config.ts'
import type { DB } from '../db/schema.ts'
import { errors } from '../errors.ts'
import { KeyedMutex } from '../publish/mutex.ts'
import type { Meta } from '../publish/pipeline.ts'
import { type Allowlist, commitAllowlist, currentAllowlist } from './allowlist.ts'
import { splitBatch, toBatch } from './batch.ts'
import { ProviderApiError, type ProviderClient, type ProviderZone } from './client.ts'
import { inversePlan, isEmpty, type ProviderChange, planChanges, safetyReasons, touchedRRsets } from './plan.ts'
import { fromApi, type ProviderRecord, revisionOf } from './records.ts'
import { type ExpectedRRset, verifyAtNameservers } from './verify.ts'
import { describePlan, planWire, summaryOf } from './wire.ts'
import { normalizeZoneName } from './zone-names.ts'

export interface ProviderDeps {
  config: Config
  db: Kysely<DB>
  client: ProviderClient
  log: Logger
  now: () => Date
  /** Counts change outcomes (dnsctl_provider_changes_total). */
  onOutcome?: (outcome: 'committed' | 'rolled_back' | 'aborted') => void
}

export interface ChangeInput {
  changes: ProviderChange[]
  confirm?: boolean
  force?: boolean
  expected_revision?: string
}

const EDIT_PERMISSION = 'DNS Edit (Zone > DNS > Edit)'

const rrsetKey = (r: { name: string; type: string }) => `${r.name} ${r.type}`

/** Provider failures of a read as API errors; `needs` names the permission a 401/403 points at. */
function readError(zone: string, needs: string) {
  return (err: unknown): never => {
    if (err instanceof ProviderApiError && err.kind === 'forbidden') {
      throw errors.provider_permission_missing(zone, needs, `reading needs it (${err.message})`)
    }
    return apiError(err)
  }
}

function apiError(err: unknown): never {
  if (err instanceof ProviderApiError) {
    if (err.kind === 'timeout') throw errors.provider_timeout(err.message)
    if (err.kind === 'rejected') throw errors.provider_rejected(err.message)
    throw errors.provider_unavailable(err.message)
  }
  throw err
}

export class ProviderService {
  readonly deps: ProviderDeps
  readonly #locks = new KeyedMutex()

  constructor(deps: ProviderDeps) {
    this.deps = deps
  }

  allowlist(): Promise<Allowlist> {
    return currentAllowlist(this.deps.db, this.deps.config.provider.zones)
  }

  /** The normalized zone name, when the allowlist holds it (else 403 zone_not_allowed). */
  allowedZone(raw: string): Promise<string> {
    return this.#allowed(raw)
  }

  async #allowed(raw: string): Promise<string> {
    let zone: string
    try {
      zone = normalizeZoneName(raw)
    } catch (err) {
      throw errors.invalid_zone_name((err as Error).message)
    }
    if (!(await this.allowlist()).zones.includes(zone)) throw errors.zone_not_allowed(zone)
    return zone
  }

  async #zone(zone: string): Promise<ProviderZone> {
    const found = await this.deps.client.zone(zone).catch(readError(zone, 'Zone Read (Zone > Zone > Read)'))
    if (!found) throw errors.provider_zone_not_found(zone)
    return found
  }

  async #records(pz: ProviderZone): Promise<ProviderRecord[]> {
    const raw = await this.deps.client.records(pz.id).catch(readError(pz.name, 'DNS Read (Zone > DNS > Read)'))
    try {
      return raw.map((r) => fromApi(r, pz.name)).filter((r): r is ProviderRecord => r !== undefined)
    } catch (err) {
      throw errors.provider_rejected((err as Error).message)
    }
  }

  /** GET .../zones: the allowlist, each zone looked up at the provider. */
  async zones() {
    const list = await this.allowlist()
    const zones = await Promise.all(
      list.zones.map(async (name) => {
        try {
          const z = await this.deps.client.zone(name)
          return z
            ? { name, found: true, provider_id: z.id, name_servers: z.name_servers, error: null }
            : {
                name,
                found: false,
                provider_id: null,
                name_servers: [],
                error: 'the provider has no such zone for this token',
              }
        } catch (err) {
          return { name, found: false, provider_id: null, name_servers: [], error: (err as Error).message }
        }
      }),
    )
    return { revision: list.revision, zones }
  }

  async records(raw: string) {
    const zone = await this.#allowed(raw)
    const pz = await this.#zone(zone)
    const records = await this.#records(pz)
    return { zone, revision: revisionOf(records), name_servers: pz.name_servers, records }
  }

  #checkRevision(expected: string | undefined, current: string, what: string) {
    if (expected === undefined) throw errors.revision_required(what)
    if (expected !== current) throw errors.revision_mismatch(expected, current)
  }

  /** POST .../plans: exact record-ID deletes, updates and proposed creates; writes nothing. */
  async plan(raw: string, input: ChangeInput, expected: string | undefined) {
    const zone = await this.#allowed(raw)
    const pz = await this.#zone(zone)
    const records = await this.#records(pz)
    const revision = revisionOf(records)
    this.#checkRevision(expected, revision, `a plan for provider zone ${zone}`)
    const plan = planChanges(zone, records, input.changes)
    const reasons = safetyReasons(plan, records.length)
    return {
      zone,
      revision,
      plan: planWire(plan),
      summary: { ...summaryOf(plan), existing_records: records.length },
      safety: { safe: reasons.length === 0, force_required: reasons.length > 0 && input.force !== true, reasons },
    }
  }

  async #audit(
    zone: string,
    meta: Meta,
    outcome: 'committed' | 'rolled_back' | 'aborted',
    before: string,
    after: string | null,
    detail: Record<string, unknown>,
  ) {
    await appendAudit(this.deps.db, {
      at: this.deps.now().toISOString(),
      zone: `extdns:${zone}`,
      action: 'provider_change',
      actor: meta.actor,
      request_id: meta.requestId,
      before_revision: before,
      after_revision: after,
      outcome,
      detail: JSON.stringify(detail),
    })
    this.deps.onOutcome?.(outcome)
  }

  /** POST .../changes with confirm: true. */
  async change(raw: string, input: ChangeInput, expected: string | undefined, meta: Meta) {
    if (input.confirm !== true) throw errors.confirm_required()
    const zone = await this.#allowed(raw)
    return this.#locks.run(zone, () => this.#apply(zone, input, expected, meta))
  }

  async #apply(zone: string, input: ChangeInput, expected: string | undefined, meta: Meta) {
    const { client, config, log } = this.deps
    const pz = await this.#zone(zone)
    // Re-read and compare: the plan the caller saw must still be the provider's state.
    const before = await this.#records(pz)
    const revision = revisionOf(before)
    this.#checkRevision(expected, revision, `a change of provider zone ${zone}`)
    const plan = planChanges(zone, before, input.changes)
    const changes = input.changes.map((c) => ({ action: c.action, name: c.name, type: c.type }))
    const reasons = safetyReasons(plan, before.length)
    if (reasons.length > 0 && input.force !== true) {
      await this.#audit(zone, meta, 'aborted', revision, null, { changes, refused: reasons })
      throw errors.unsafe_change(reasons.join(' and '))
    }
    if (isEmpty(plan)) {
      return {
        zone,
        applied: false,
        revision_before: revision,
        revision,
        plan: planWire(plan),
        batch: { ...summaryOf(plan), requests: 0 },
        api_verified: true,
        dns_verified: null,
        rolled_back: false,
        warnings: ['nothing to change: the provider already holds these records'],
      }
    }
    const touched = touchedRRsets(plan, input.changes, zone)
    let failure: string | undefined
    const requests = splitBatch(toBatch(zone, plan), config.provider.batchLimit)
    try {
      for (const request of requests) await client.batch(pz.id, request)
    } catch (err) {
      if (err instanceof ProviderApiError && err.kind === 'forbidden') {
        await this.#audit(zone, meta, 'aborted', revision, null, { changes, error: err.message })
        throw errors.provider_permission_missing(
          zone,
          EDIT_PERMISSION,
          'changes need it (records and plans need only Zone Read and DNS Read); nothing was written',
        )
      }
      failure = `the batch request failed (${(err as Error).message})`
    }
    // Verify the API state: the same changes planned again must find nothing left to do, and
    // nothing outside the touched RRsets may have moved.
    let after: ProviderRecord[]
    try {
      after = await this.#records(pz)
    } catch (err) {
      await this.#audit(zone, meta, 'aborted', revision, null, {
        changes,
        error: (err as Error).message,
        state: 'unknown',
      })
      throw errors.provider_change_failed(
        zone,
        `${failure ?? 'the batch was accepted'}, and reading the records back failed (${(err as Error).message}); the state is unknown: read the records and plan again`,
      )
    }
    const remaining = planChanges(zone, after, input.changes, { missingDeleteOk: true })
    const outside = (rs: ProviderRecord[]) =>
      JSON.stringify(
        rs
          .filter((r) => !touched.has(rrsetKey(r)))
          .map((r) => [r.id, r.value, r.ttl])
          .sort(),
      )
    if (!failure && !isEmpty(remaining))
      failure = `the provider state differs after the batch: ${describePlan(remaining)}`
    if (!failure && outside(before) !== outside(after))
      failure = 'records outside the changed RRsets differ after the batch'
    if (failure) {
      const undo = inversePlan(before, after, touched)
      if (isEmpty(undo)) {
        await this.#audit(zone, meta, 'aborted', revision, revisionOf(after), {
          changes,
          error: failure,
          applied: false,
        })
        throw errors.provider_change_failed(zone, `${failure}; nothing was applied`)
      }
      let restored = false
      let rollbackError: string | undefined
      try {
        for (const request of splitBatch(toBatch(zone, undo), config.provider.batchLimit)) {
          await client.batch(pz.id, request)
        }
        restored = isEmpty(inversePlan(before, await this.#records(pz), touched))
      } catch (err) {
        rollbackError = (err as Error).message
      }
      log.error(
        { zone, failure, restored, rollback_error: rollbackError },
        'provider change failed; compensating rollback attempted',
      )
      await this.#audit(zone, meta, 'rolled_back', revision, null, {
        changes,
        error: failure,
        rollback: { ...summaryOf(undo), restored, ...(rollbackError ? { error: rollbackError } : {}) },
      })
      throw errors.provider_change_failed(
        zone,
        `${failure}; ${restored ? 'a compensating rollback restored the previous records' : `the compensating rollback did not restore the previous records${rollbackError ? ` (${rollbackError})` : ''}: read the records and plan again`}`,
      )
    }
    // Verify at the assigned nameservers; lag is a warning, never rolled back.
    const expectedSets: ExpectedRRset[] = [...touched].map((k) => {
      const [name, type] = k.split(' ') as [string, ProviderRecord['type']]
      const rs = after.filter((r) => rrsetKey(r) === k)
      return { name, type, values: rs.map((r) => r.value), proxied: rs.some((r) => r.proxied) }
    })
    const dns = await verifyAtNameservers(zone, pz.name_servers, expectedSets, {
      port: config.provider.dnsPort,
      timeoutMs: config.provider.dnsVerifyTimeout,
    })
    const warnings = dns.verified
      ? []
      : [
          dns.refused
            ? `not verified by DNS: the assigned nameservers are not running (${dns.mismatches.join('; ')}); the change is applied at the provider, not rolled back`
            : `propagation lag: the assigned nameservers do not serve the change yet (${dns.mismatches.join('; ')}); not rolled back`,
        ]
    const newRevision = revisionOf(after)
    await this.#audit(zone, meta, 'committed', revision, newRevision, {
      changes,
      ...summaryOf(plan),
      forced: reasons.length > 0,
      dns_verified: dns.verified,
      warnings,
    })
    return {
      zone,
      applied: true,
      revision_before: revision,
      revision: newRevision,
      plan: planWire(plan),
      batch: { ...summaryOf(plan), requests: requests.length },
      api_verified: true,
      dns_verified: dns.verified,
      rolled_back: false,
      warnings,
    }
  }

  /** PUT .../allowlist: validate (each zone looked up at the provider) and, unless dry_run, commit. */
  async putAllowlist(
    input: { zones: string[]; dry_run?: boolean; expected_revision?: string },
    expected: string | undefined,
    meta: Meta,
  ) {
    const zones: string[] = []
    for (const raw of input.zones) {
      try {
        const z = normalizeZoneName(raw)
        if (!zones.includes(z)) zones.push(z)
      } catch (err) {
        throw errors.invalid_allowlist((err as Error).message)
      }
    }
    zones.sort()
    const current = await this.allowlist()
    if (!input.dry_run) this.#checkRevision(expected, current.revision, 'updating the provider allowlist')
    const validation = await Promise.all(
      zones.map(async (name) => {
        try {
          const z = await this.deps.client.zone(name)
          return {
            zone: name,
            found: z !== undefined,
            error: z ? null : 'the provider has no such zone for this token',
          }
        } catch (err) {
          return { zone: name, found: false, error: (err as Error).message }
        }
      }),
    )
    if (input.dry_run) return { zones, revision: current.revision, dry_run: true, validation }
    const revision = await commitAllowlist(this.deps.db, {
      zones,
      committed_at: this.deps.now().toISOString(),
      actor: meta.actor,
      request_id: meta.requestId,
    })
    return { zones, revision, dry_run: false, validation }
  }
}
