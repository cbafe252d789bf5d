/**
 * The zone model: an origin and its records, always held in canonical order, with the
 * canonical renderer. `parseZone(renderZone(z))` equals `z` for every valid zone.
 */
import { compareNames, relativeName } from './names.ts'
import { type RecordType, TYPE_ORDER } from './rdata.ts'

export interface ZoneRecord {
  /** Absolute, lower-case owner name with the trailing dot. */
  name: string
  ttl: number
  type: RecordType
  /** Canonical presentation RDATA (see rdata.ts). */
  rdata: string
}

export interface Zone {
  /** Absolute, lower-case zone name with the trailing dot. */
  origin: string
  /** Canonical order: SOA first, then owner (RFC 4034 order), type, RDATA. */
  records: ZoneRecord[]
}

/**
 * Where the records of a parsed zone came from, for messages of zone-level rules: the records
 * in text order and their line numbers. Kept per zone rather than per record (a property or a
 * map entry per record costs more than the rest of parsing it), and looked up only for an error.
 */
const SOURCES = new WeakMap<Zone, { records: ZoneRecord[]; lines: number[] }>()

/** Remember the text lines of a zone's records (`records` and `lines` in text order). */
export function setSourceLines(zone: Zone, records: ZoneRecord[], lines: number[]): void {
  SOURCES.set(zone, { records, lines })
}

/** The zone text line a record of a parsed zone came from; undefined for other zones. */
export function recordLine(zone: Zone, record: ZoneRecord): number | undefined {
  const source = SOURCES.get(zone)
  if (!source) return undefined
  const i = source.records.indexOf(record)
  return i < 0 ? undefined : source.lines[i]
}

/** Canonical record order: the apex SOA first, then owner (RFC 4034), type, RDATA. */
export function compareRecords(a: ZoneRecord, b: ZoneRecord, origin: string): number {
  const aSoa = a.type === 'SOA' && a.name === origin
  const bSoa = b.type === 'SOA' && b.name === origin
  if (aSoa !== bSoa) return aSoa ? -1 : 1
  if (a.name !== b.name) return compareNames(a.name, b.name)
  if (a.type !== b.type) return TYPE_ORDER[a.type] - TYPE_ORDER[b.type]
  if (a.rdata !== b.rdata) return a.rdata < b.rdata ? -1 : 1
  return a.ttl - b.ttl
}

/** Sort records into canonical order (a new array; the input is not changed). */
export function sortRecords(records: readonly ZoneRecord[], origin: string): ZoneRecord[] {
  return [...records].sort((a, b) => compareRecords(a, b, origin))
}

/** Merge two canonically sorted lists in linear time (a change batch into a large zone). */
export function mergeRecords(a: readonly ZoneRecord[], b: readonly ZoneRecord[], origin: string): ZoneRecord[] {
  const out: ZoneRecord[] = new Array(a.length + b.length)
  let i = 0
  let j = 0
  let k = 0
  while (i < a.length && j < b.length) out[k++] = compareRecords(a[i]!, b[j]!, origin) <= 0 ? a[i++]! : b[j++]!
  while (i < a.length) out[k++] = a[i++]!
  while (j < b.length) out[k++] = b[j++]!
  return out
}

/**
 * Canonical zone text: `$ORIGIN`, then one record per line with owner names relative to the
 * origin, explicit TTL and class, and canonical RDATA (absolute names).
 */
export function renderZone(zone: Zone): string {
  // One growing string (V8 keeps it as a rope and flattens it once) costs about two thirds of
  // collecting the lines in an array and joining them: it matters at 100k records per change.
  let text = `$ORIGIN ${zone.origin}\n`
  for (const r of zone.records) text += `${relativeName(r.name, zone.origin)} ${r.ttl} IN ${r.type} ${r.rdata}\n`
  return text
}

/** Records grouped by RRset (owner and type), in canonical order. */
export function rrsets(zone: Zone): { name: string; type: RecordType; ttl: number; rdata: string[] }[] {
  const out: { name: string; type: RecordType; ttl: number; rdata: string[] }[] = []
  for (const r of zone.records) {
    const last = out[out.length - 1]
    if (last && last.name === r.name && last.type === r.type) last.rdata.push(r.rdata)
    else out.push({ name: r.name, type: r.type, ttl: r.ttl, rdata: [r.rdata] })
  }
  return out
}
