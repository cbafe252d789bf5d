/**
 * RRset changes of a batch, applied in memory to a zone (spec steps 2 and 3). Each change
 * replaces (upsert) or removes (delete) one whole RRset; the result is then validated as a
 * complete zone.
 */
import { errors } from '../errors.ts'
import {
  isInZone,
  isValidTtl,
  lexRecord,
  MAX_TTL,
  mergeRecords,
  NameError,
  parseRdata,
  recordType,
  relativeName,
  resolveName,
  sortRecords,
  validateZone,
  type Zone,
  ZoneError,
  type ZoneRecord,
} from '../zonefile/index.ts'
import { apiError } from './model.ts'

export interface RRsetChange {
  action: 'upsert' | 'delete'
  /** Owner relative to the zone (`@` or empty for the apex), or absolute with a trailing dot. */
  name: string
  type: string
  ttl?: number
  records?: string[]
}

export function ownerName(written: string, origin: string): string {
  let name: string
  try {
    name = resolveName(written === '' ? '@' : written, origin)
  } catch (err) {
    if (err instanceof NameError) throw errors.invalid_record(`name ${JSON.stringify(written)}: ${err.message}`)
    throw err
  }
  if (!isInZone(name, origin)) throw errors.name_outside_zone(`owner name ${name} is outside the zone ${origin}`)
  return name
}

/** Apply the batch; returns the new zone (canonical order, validated) or throws the API error. */
export function applyChanges(zone: Zone, changes: readonly RRsetChange[]): Zone {
  const origin = zone.origin
  const removed = new Set<string>()
  const added: ZoneRecord[] = []
  for (const [index, change] of changes.entries()) {
    const where = `changes[${index}]`
    const name = ownerName(change.name, origin)
    let type: ZoneRecord['type']
    try {
      type = recordType(change.type)
    } catch (err) {
      if (err instanceof ZoneError) throw errors[err.code](`${where}: ${err.message}`)
      throw err
    }
    const label = `${relativeName(name, origin)} ${type}`
    if (type === 'SOA') throw errors.soa_change_forbidden()
    const key = `${name} ${type}`
    if (removed.has(key)) throw errors.conflicting_changes(label)
    removed.add(key)
    if (change.action === 'delete') {
      if (change.ttl !== undefined || change.records !== undefined) {
        throw errors.invalid_record(`${where}: a delete removes the whole RRset and takes no ttl or records`)
      }
      if (!zone.records.some((r) => r.name === name && r.type === type)) throw errors.rrset_not_found(label)
      continue
    }
    if (change.ttl === undefined) throw errors.invalid_ttl(`${where}: an upsert needs a ttl`)
    if (!isValidTtl(change.ttl)) {
      throw errors.invalid_ttl(`${where}: TTL ${change.ttl} must be an integer from 0 to ${MAX_TTL} (RFC 2181)`)
    }
    if (!change.records || change.records.length === 0) {
      throw errors.invalid_record(`${where}: an upsert needs at least one record (use delete to remove an RRset)`)
    }
    const seen = new Set<string>()
    for (const [i, text] of change.records.entries()) {
      let rdata: string
      try {
        rdata = parseRdata(type, lexRecord(text), origin)
      } catch (err) {
        if (err instanceof ZoneError) throw errors[err.code](`${where}.records[${i}]: ${err.message}`)
        throw err
      }
      if (seen.has(rdata)) throw errors.duplicate_record(`${where}: duplicate record ${label} ${rdata}`)
      seen.add(rdata)
      added.push({ name, ttl: change.ttl, type, rdata })
    }
  }
  // Test the (few) changed owner names first: building a key per record of a large zone is slow.
  const touched = new Set([...removed].map((k) => k.slice(0, k.indexOf(' '))))
  const kept = zone.records.filter((r) => !touched.has(r.name) || !removed.has(`${r.name} ${r.type}`))
  const next: Zone = { origin, records: mergeRecords(kept, sortRecords(added, origin), origin) }
  try {
    validateZone(next)
  } catch (err) {
    if (err instanceof ZoneError) throw apiError(err)
    throw err
  }
  return next
}
