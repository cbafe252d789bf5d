/** A managed zone as the API sees it, its revision, and zone-name and serial helpers. */
import { createHash } from 'node:crypto'
import { errors } from '../errors.ts'
import {
  NameError,
  parseZone,
  renderZone,
  resolveName,
  soaFields,
  soaText,
  validateZone,
  type Zone,
  ZoneError,
} from '../zonefile/index.ts'

export type Role = 'primary' | 'secondary'

export interface ZoneState {
  /** Absolute, lower-case name with the trailing dot. */
  name: string
  role: Role
  zone: Zone
  /** Canonical zone text (what is in Knot's zone file). */
  text: string
  revision: string
  serial: number
}

/**
 * The revision: opaque, derived from the canonical content (role and canonical text), so
 * equal content has equal revisions across restarts and machines.
 */
export function revisionOf(role: Role, text: string): string {
  // Same digest as hashing `${role}\n${text}`, without copying a zone text of megabytes.
  return createHash('sha256').update(role).update('\n').update(text).digest('base64url').slice(0, 27)
}

export function stateOf(name: string, role: Role, zone: Zone): ZoneState {
  const text = renderZone(zone)
  return { name, role, zone, text, revision: revisionOf(role, text), serial: soaFields(zone.records[0]!.rdata).serial }
}

/** Zone name from a URL path segment: `example.test` or `example.test.`, any case. */
export function zoneNameFromPath(segment: string): string {
  if (segment === '' || segment === '.' || segment === '@')
    throw errors.invalid_zone_name('the root zone is not managed')
  if (segment.startsWith('*')) throw errors.invalid_zone_name('a zone name cannot be a wildcard')
  try {
    return resolveName(segment.endsWith('.') ? segment : `${segment}.`, '.')
  } catch (err) {
    if (err instanceof NameError) throw errors.invalid_zone_name(err.message)
    throw err
  }
}

/** A ZoneError as the API error with the same code. */
export function apiError(err: ZoneError) {
  return errors[err.code](err.message)
}

/** Parse and validate complete zone text; throws the API error. */
export function parseZoneText(name: string, text: string): Zone {
  try {
    const zone = parseZone(text, { origin: name })
    validateZone(zone)
    return zone
  } catch (err) {
    if (err instanceof ZoneError) throw apiError(err)
    throw err
  }
}

/** RFC 1982 serial arithmetic: is a "later" than b? */
export function serialAfter(a: number, b: number): boolean {
  return a !== b && ((a > b && a - b < 2 ** 31) || (a < b && b - a > 2 ** 31))
}

/** The zone with its SOA serial replaced. */
export function withSerial(zone: Zone, serial: number): Zone {
  const records = zone.records.slice()
  const soa = records[0]!
  records[0] = { ...soa, rdata: soaText({ ...soaFields(soa.rdata), serial }) }
  return { origin: zone.origin, records }
}

/**
 * Whether two versions of a zone hold the same records, the SOA serial aside: publishing the one
 * over the other would change nothing but the serial (and bring replicas a transfer of the same
 * data). Both hold their records in canonical order, SOA first, so one walk compares them.
 */
export function sameRecordsBesidesSerial(a: Zone, b: Zone): boolean {
  if (a.origin !== b.origin || a.records.length !== b.records.length) return false
  for (let i = 0; i < a.records.length; i++) {
    const x = a.records[i]!
    const y = b.records[i]!
    if (x.name !== y.name || x.type !== y.type || x.ttl !== y.ttl) return false
    if (x.rdata === y.rdata) continue
    if (i > 0 || x.type !== 'SOA') return false
    if (soaText({ ...soaFields(x.rdata), serial: 0 }) !== soaText({ ...soaFields(y.rdata), serial: 0 })) return false
  }
  return true
}

/** The next serial: one more than the current one (mod 2^32), or the given one when it is already later. */
export function nextSerial(current: number, proposed?: number): number {
  if (proposed !== undefined && serialAfter(proposed, current)) return proposed
  return (current + 1) % 2 ** 32
}
