/**
 * Record-level difference between two versions of a zone, the way octoDNS's plan shows one:
 * which records a change would add and which it would remove, in canonical order. Both zones
 * hold their records in canonical order, so one merge walk finds the difference in linear time.
 */
import { compareRecords, relativeName, type Zone, type ZoneRecord } from '../zonefile/index.ts'

export interface DiffLine {
  op: 'add' | 'remove'
  /** One record in zone-file presentation: owner relative to the zone, TTL, class, type, RDATA. */
  record: string
}

export interface ZoneDiff {
  added: number
  removed: number
  unchanged: number
  /** Canonical order; where a record is replaced, its removal comes first. */
  records: DiffLine[]
}

function line(r: ZoneRecord, origin: string): string {
  return `${relativeName(r.name, origin)} ${r.ttl} IN ${r.type} ${r.rdata}`
}

/** The records `after` adds to `before` and removes from it (`before` undefined: a new zone). */
export function diffZones(before: Zone | undefined, after: Zone): ZoneDiff {
  const origin = after.origin
  const a = before?.records ?? []
  const b = after.records
  const records: DiffLine[] = []
  let unchanged = 0
  let i = 0
  let j = 0
  while (i < a.length || j < b.length) {
    const c = i >= a.length ? 1 : j >= b.length ? -1 : compareRecords(a[i]!, b[j]!, origin)
    if (c === 0) {
      unchanged++
      i++
      j++
    } else if (c < 0) records.push({ op: 'remove', record: line(a[i++]!, origin) })
    else records.push({ op: 'add', record: line(b[j++]!, origin) })
  }
  // An SOA sorts first in both lists, so a changed SOA shows as a removal then an addition; a
  // record whose TTL alone changed also shows as a pair (TTL is the last sort key).
  const added = records.filter((r) => r.op === 'add').length
  return { added, removed: records.length - added, unchanged, records }
}
