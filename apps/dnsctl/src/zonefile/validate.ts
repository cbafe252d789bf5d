/**
 * Zone-level rules, beyond what each record says on its own. Knot's kzonecheck accepts
 * several of these (two SOAs, records outside the zone, duplicates, an RRset with two TTLs);
 * the API refuses them because they are always mistakes in a zone someone maintains by hand.
 */
import { ZoneError } from './errors.ts'
import { compareNames, isInZone, relativeName } from './names.ts'
import { recordLine, type Zone, type ZoneRecord } from './zone.ts'

/** Whether `name` owns an A or AAAA record; `records` in canonical order (SOA first). */
function hasAddress(records: readonly ZoneRecord[], name: string): boolean {
  // Binary search for the first record of `name` after the SOA, then walk its RRsets.
  let lo = 1
  let hi = records.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (compareNames(records[mid]!.name, name) < 0) lo = mid + 1
    else hi = mid
  }
  for (let i = lo; i < records.length && records[i]!.name === name; i++) {
    if (records[i]!.type === 'A' || records[i]!.type === 'AAAA') return true
  }
  return false
}

function show(r: ZoneRecord, origin: string): string {
  return `${relativeName(r.name, origin)} ${r.type} ${r.rdata}`
}

/** Throw the first rule violation as a `ZoneError`; records must be in canonical order. */
export function validateZone(zone: Zone): void {
  const { origin, records } = zone
  let soaCount = 0
  let apexNs = 0
  for (const r of records) {
    if (!isInZone(r.name, origin)) {
      throw new ZoneError(
        'name_outside_zone',
        `owner name ${r.name} is outside the zone ${origin}`,
        recordLine(zone, r),
      )
    }
    if (r.type === 'SOA') {
      if (r.name !== origin) {
        throw new ZoneError(
          'apex_violation',
          `SOA record at ${r.name}: the SOA must be at the zone apex ${origin}`,
          recordLine(zone, r),
        )
      }
      soaCount++
      if (soaCount > 1) {
        throw new ZoneError(
          'apex_violation',
          `zone ${origin} has a second SOA record; exactly one is allowed`,
          recordLine(zone, r),
        )
      }
    }
    if (r.type === 'NS' && r.name === origin) apexNs++
  }
  if (soaCount === 0) throw new ZoneError('apex_violation', `zone ${origin} has no SOA record at its apex`)
  if (apexNs === 0) throw new ZoneError('apex_violation', `zone ${origin} has no NS records at its apex`)

  // Records are sorted by owner then type then RDATA: neighbours reveal duplicates,
  // RRsets with two TTLs and CNAMEs sharing an owner.
  for (let i = 0; i < records.length; i++) {
    const r = records[i]!
    const prev = records[i - 1]
    if (prev && prev.name === r.name && prev.type === r.type) {
      if (prev.rdata === r.rdata) {
        throw new ZoneError('duplicate_record', `duplicate record: ${show(r, origin)}`, recordLine(zone, r))
      }
      if (prev.ttl !== r.ttl) {
        throw new ZoneError(
          'invalid_ttl',
          `RRset ${relativeName(r.name, origin)} ${r.type} has records with TTLs ${prev.ttl} and ${r.ttl}; an RRset has one TTL (RFC 2181 §5.2)`,
          recordLine(zone, r),
        )
      }
      if (r.type === 'CNAME') {
        throw new ZoneError(
          'cname_conflict',
          `${relativeName(r.name, origin)} has more than one CNAME record`,
          recordLine(zone, r),
        )
      }
    }
    if (prev && prev.name === r.name && prev.type !== r.type && (prev.type === 'CNAME' || r.type === 'CNAME')) {
      const other = prev.type === 'CNAME' ? r.type : prev.type
      throw new ZoneError(
        'cname_conflict',
        `${relativeName(r.name, origin)} has a CNAME and ${other} records; a CNAME cannot share its owner name (RFC 1034 §3.6.2)`,
        recordLine(zone, r),
      )
    }
  }

  // Knot refuses a zone whose in-zone name servers have no address (missing glue). Name
  // servers are few and records are sorted by owner: look each one up instead of indexing
  // every address record of a large zone.
  for (const r of records) {
    if (r.type !== 'NS' || !isInZone(r.rdata, origin) || hasAddress(records, r.rdata)) continue
    const where = r.name === origin ? 'apex_violation' : 'invalid_record'
    throw new ZoneError(
      where,
      `name server ${r.rdata} of ${relativeName(r.name, origin)} is inside the zone but has no A or AAAA record (missing glue)`,
      recordLine(zone, r),
    )
  }
}
