/**
 * Plans for the provider: RRset changes (the zone API's shape, plus optional `proxied`,
 * `comment` and `tags`) turned into exact record-ID deletes, in-place updates (TTL or
 * attributes of a kept value) and creates, against the records the provider holds. Attributes
 * are preserved when uniform across the RRset, unless the change overrides them. Also the
 * octoDNS-style safety check (more than 30% of a zone of at least 10 records deleted or updated,
 * or the apex NS set touched) and the inverse plan a compensating rollback submits.
 */
import { errors } from '../errors.ts'
import { isValidTtl, type RecordType, recordType, relativeName, ZoneError } from '../zonefile/index.ts'
import { ownerName } from '../zones/changes.ts'
import { type Attributes, canonicalValue, PROVIDER_TYPES, type ProviderRecord, proxiable } from './records.ts'

export interface ProviderChange {
  action: 'upsert' | 'delete'
  name: string
  type: string
  ttl?: number
  records?: string[]
  proxied?: boolean
  comment?: string | null
  tags?: string[]
}

export interface PlannedCreate extends Attributes {
  name: string
  type: RecordType
  ttl: number
  value: string
}

export interface PlannedUpdate {
  id: string
  name: string
  type: RecordType
  value: string
  from: { ttl: number } & Attributes
  to: { ttl: number } & Attributes
}

export interface Plan {
  deletes: ProviderRecord[]
  updates: PlannedUpdate[]
  creates: PlannedCreate[]
}

export function isEmpty(plan: Plan): boolean {
  return plan.deletes.length + plan.updates.length + plan.creates.length === 0
}

/** octoDNS's defaults: MIN_EXISTING_RECORDS 10, MAX_SAFE_UPDATE_PCENT and MAX_SAFE_DELETE_PCENT 0.3. */
export const SAFETY = { minExisting: 10, maxUpdateShare: 0.3, maxDeleteShare: 0.3 }

export function safetyReasons(plan: Plan, existing: number): string[] {
  const reasons: string[] = []
  if (existing >= SAFETY.minExisting) {
    const pct = (n: number) => `${Math.round((n / existing) * 1000) / 10}%`
    if (plan.updates.length / existing > SAFETY.maxUpdateShare) {
      reasons.push(`updates ${plan.updates.length} of ${existing} records (${pct(plan.updates.length)}, more than 30%)`)
    }
    if (plan.deletes.length / existing > SAFETY.maxDeleteShare) {
      reasons.push(`deletes ${plan.deletes.length} of ${existing} records (${pct(plan.deletes.length)}, more than 30%)`)
    }
  }
  const apexNs = (r: { name: string; type: string }) => r.name === '@' && r.type === 'NS'
  if ([...plan.deletes, ...plan.updates, ...plan.creates].some(apexNs)) reasons.push('touches the apex NS set')
  return reasons
}

const key = (name: string, type: string) => `${name} ${type}`

function sameAttributes(a: Attributes & { ttl: number }, b: Attributes & { ttl: number }): boolean {
  return (
    a.ttl === b.ttl &&
    a.proxied === b.proxied &&
    a.comment === b.comment &&
    a.tags.length === b.tags.length &&
    a.tags.every((t, i) => t === b.tags[i])
  )
}

/** The attribute every record of the RRset shares, or undefined when they differ (or there are none). */
function uniform<T>(records: ProviderRecord[], pick: (r: ProviderRecord) => T): T | undefined {
  if (records.length === 0) return undefined
  const first = JSON.stringify(pick(records[0]!))
  return records.every((r) => JSON.stringify(pick(r)) === first) ? pick(records[0]!) : undefined
}

function checkType(written: string, where: string): RecordType {
  let type: RecordType
  try {
    type = recordType(written)
  } catch (err) {
    if (err instanceof ZoneError) throw errors.unsupported_type(`${where}: ${err.message}`)
    throw err
  }
  if (!(PROVIDER_TYPES as readonly string[]).includes(type)) {
    throw errors.unsupported_type(`${where}: ${type} records belong to the provider; use ${PROVIDER_TYPES.join(', ')}`)
  }
  return type
}

/** The plan of a batch of changes against the provider's current records. */
export function planChanges(
  zone: string,
  current: readonly ProviderRecord[],
  changes: readonly ProviderChange[],
  options: { missingDeleteOk?: boolean } = {},
): Plan {
  const origin = `${zone}.`
  const byRRset = new Map<string, ProviderRecord[]>()
  for (const r of current) byRRset.set(key(r.name, r.type), [...(byRRset.get(key(r.name, r.type)) ?? []), r])
  const plan: Plan = { deletes: [], updates: [], creates: [] }
  const seen = new Set<string>()
  for (const [index, change] of changes.entries()) {
    const where = `changes[${index}]`
    const name = relativeName(ownerName(change.name, origin), origin)
    const type = checkType(change.type, where)
    const k = key(name, type)
    if (seen.has(k)) throw errors.conflicting_changes(`${name} ${type}`)
    seen.add(k)
    const existing = byRRset.get(k) ?? []
    if (change.action === 'delete') {
      if (existing.length === 0 && !options.missingDeleteOk) throw errors.rrset_not_found(`${name} ${type}`)
      plan.deletes.push(...existing)
      continue
    }
    if (!change.records || change.records.length === 0) {
      throw errors.invalid_record(
        `${where}: an upsert needs at least one record (use action delete to remove the RRset)`,
      )
    }
    if (change.proxied !== undefined && !proxiable(type)) {
      throw errors.invalid_record(`${where}: only A, AAAA and CNAME records can be proxied`)
    }
    const ttl = change.ttl ?? uniform(existing, (r) => r.ttl) ?? 1
    if (ttl !== 1 && !isValidTtl(ttl)) throw errors.invalid_ttl(`${where}: TTL ${ttl} is out of range`)
    const values: string[] = []
    for (const text of change.records) {
      let value: string
      try {
        value = canonicalValue(type, text, zone)
      } catch (err) {
        if (err instanceof ZoneError) throw errors.invalid_record(`${where}: ${err.message}`)
        throw err
      }
      if (values.includes(value)) throw errors.duplicate_record(`${where}: ${type} ${value} is given twice`)
      values.push(value)
    }
    if (type === 'CNAME' && values.length > 1) throw errors.cname_conflict(`${where}: a name has at most one CNAME`)
    // Attributes: the override, else what the whole RRset shares, else each kept record's own.
    const shared: Partial<Attributes> = {
      proxied: change.proxied ?? uniform(existing, (r) => r.proxied),
      comment: change.comment !== undefined ? change.comment : uniform(existing, (r) => r.comment),
      tags: change.tags ? [...change.tags].sort() : uniform(existing, (r) => r.tags),
    }
    const target = (own: Attributes | undefined): Attributes & { ttl: number } => ({
      ttl,
      proxied: proxiable(type) ? (shared.proxied ?? own?.proxied ?? false) : false,
      comment: shared.comment !== undefined ? shared.comment : (own?.comment ?? null),
      tags: shared.tags ?? own?.tags ?? [],
    })
    for (const r of existing) {
      if (!values.includes(r.value)) plan.deletes.push(r)
      else if (!sameAttributes(r, target(r))) {
        const to = target(r)
        plan.updates.push({
          id: r.id,
          name,
          type,
          value: r.value,
          from: { ttl: r.ttl, proxied: r.proxied, comment: r.comment, tags: r.tags },
          to,
        })
      }
    }
    for (const value of values) {
      if (!existing.some((r) => r.value === value)) plan.creates.push({ name, type, value, ...target(undefined) })
    }
  }
  return plan
}

/**
 * The plan that brings the touched RRsets back to `before` (a compensating rollback): records
 * created since go, changed ones get their old TTL and attributes back, deleted ones are created
 * again (with new IDs: providers do not reuse them).
 */
export function inversePlan(
  before: readonly ProviderRecord[],
  now: readonly ProviderRecord[],
  touched: Set<string>,
): Plan {
  const plan: Plan = { deletes: [], updates: [], creates: [] }
  const inTouched = (r: ProviderRecord) => touched.has(key(r.name, r.type))
  const old = before.filter(inTouched)
  const cur = now.filter(inTouched)
  for (const r of cur) {
    const was = old.find((o) => o.name === r.name && o.type === r.type && o.value === r.value)
    if (!was) plan.deletes.push(r)
    else if (!sameAttributes(r, was)) {
      plan.updates.push({
        id: r.id,
        name: r.name,
        type: r.type,
        value: r.value,
        from: { ttl: r.ttl, proxied: r.proxied, comment: r.comment, tags: r.tags },
        to: { ttl: was.ttl, proxied: was.proxied, comment: was.comment, tags: was.tags },
      })
    }
  }
  for (const o of old) {
    if (!cur.some((r) => r.name === o.name && r.type === o.type && r.value === o.value)) {
      plan.creates.push({
        name: o.name,
        type: o.type,
        value: o.value,
        ttl: o.ttl,
        proxied: o.proxied,
        comment: o.comment,
        tags: o.tags,
      })
    }
  }
  return plan
}

/** RRset keys (`name type`) a plan touches. */
export function touchedRRsets(plan: Plan, changes: readonly ProviderChange[], zone: string): Set<string> {
  const origin = `${zone}.`
  const out = new Set<string>()
  for (const c of changes) out.add(key(relativeName(ownerName(c.name, origin), origin), c.type.toUpperCase()))
  for (const r of [...plan.deletes, ...plan.updates, ...plan.creates]) out.add(key(r.name, r.type))
  return out
}
