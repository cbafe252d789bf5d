/**
 * Observation merge rules (spec "Limits"): IP and port sets keep the first 128 values in
 * sorted order; sightings keep the IP/port pairing and the 128 most recent; counts are
 * the gate's running totals, so the larger wins. Every rule is a join (commutative,
 * associative, idempotent): a re-sent page changes nothing.
 */
import { compareIps, EDGE_LIMITS, mergeIpSet, mergePortSet, mergeSightingLists } from '@gatehouse/kit/edge-limits.ts'
import type { Observation } from '@gatehouse/kit/edge-wire.ts'
import { normalizeIp } from '@gatehouse/kit/net.ts'
import type { FingerprintRow, NewFingerprint } from '../db/schema.ts'
import { errors } from '../errors.ts'
import type { ClockCheck } from '../nodes/clock-ahead.ts'
import { parseMillis } from '../timestamps.ts'

export interface StoredSighting {
  ip: string
  port: number
  last_seen_ms: number
}

/** An observation checked and normalised: canonical IPs, times in ms. */
export interface Aggregate {
  fingerprint: string
  reported_status: string
  first_seen_ms: number
  last_seen_ms: number
  count: number
  ips: string[]
  ports: number[]
  sightings: StoredSighting[]
  metadata: Record<string, string>
}

function time(text: string, index: number, field: string): number {
  const ms = parseMillis(text)
  if (ms === undefined) throw errors.invalid_timestamp(`observations[${index}].${field}`)
  return ms
}

const DOTTED_QUAD = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/

// Canonical forms of other address texts (IPv6 mostly), memoised like the sort keys.
const canonical = new Map<string, string>()

/** The canonical text of an address, or undefined when it is not one. */
function ip(text: string): string | undefined {
  // Plain dotted quads are already canonical: skip the general parser (the ingest hot path).
  if (DOTTED_QUAD.test(text)) return text
  let out = canonical.get(text)
  if (out === undefined) {
    try {
      out = normalizeIp(text)
    } catch {
      return undefined
    }
    if (canonical.size >= 50_000) canonical.clear()
    canonical.set(text, out)
  }
  return out
}

/** Numeric address order, IPv4 before IPv6: the kit's one rule for fingerprint sets. */
export { compareIps }

/**
 * Validate one observation beyond its schema; throws a 4xx AppError naming the field. With
 * `clock`, times too far ahead of its arrival are recorded as the arrival (nodes/clock-ahead.ts).
 */
export function normalizeObservation(o: Observation, index: number, cutoffMs: number, clock?: ClockCheck): Aggregate {
  // Field names are built only for an error message (this is the ingest hot path).
  const sentFirst = time(o.first_seen, index, 'first_seen')
  const sentLast = time(o.last_seen, index, 'last_seen')
  if (sentFirst > sentLast) throw errors.invalid_observation(`observations[${index}]: first_seen is after last_seen`)
  const last = clock ? clock.date(sentLast) : sentLast
  const first = clock ? Math.min(clock.date(sentFirst), last) : sentFirst
  // A plain object whatever the parser produced (own keys only).
  const metadata: Record<string, string> = Object.fromEntries(Object.entries(o.metadata ?? {}))
  // Encoded, a UTF-16 unit takes at most 6 bytes (\u escapes; UTF-8 needs at most 3), plus
  // quotes, colon and comma per entry: encode and count only when that bound is too large.
  let bound = 2
  for (const k in metadata) bound += 6 * (k.length + (metadata[k]?.length ?? 0)) + 6
  if (bound > EDGE_LIMITS.metadataBytes && Buffer.byteLength(JSON.stringify(metadata)) > EDGE_LIMITS.metadataBytes) {
    throw errors.metadata_too_large(EDGE_LIMITS.metadataBytes)
  }
  const ips = new Array<string>(o.ips.length)
  for (let i = 0; i < ips.length; i++) {
    const x = ip(o.ips[i]!)
    if (x === undefined) throw errors.invalid_ip(`observations[${index}].ips[${i}]`)
    ips[i] = x
  }
  const sightings = new Array<StoredSighting>(o.sightings.length)
  for (let i = 0; i < sightings.length; i++) {
    const s = o.sightings[i]!
    const x = ip(s.ip)
    if (x === undefined) throw errors.invalid_ip(`observations[${index}].sightings[${i}].ip`)
    const seen = parseMillis(s.last_seen)
    if (seen === undefined) throw errors.invalid_timestamp(`observations[${index}].sightings[${i}].last_seen`)
    sightings[i] = { ip: x, port: s.port, last_seen_ms: clock ? clock.date(seen) : seen }
  }
  return {
    fingerprint: o.fingerprint,
    reported_status: o.status,
    first_seen_ms: first,
    last_seen_ms: last,
    count: o.count,
    ips: mergeIps([], ips),
    ports: mergePorts([], o.ports),
    sightings: mergeSightings([], sightings, cutoffMs),
    metadata,
  }
}

// The set rules are the kit's (packages/kit/src/edge-limits.ts), shared with the SSH gate so
// both keep the same 128 values, ties included.
export function mergeIps(a: string[], b: string[]): string[] {
  return mergeIpSet(a, b)
}

export function mergePorts(a: number[], b: number[]): number[] {
  return mergePortSet(a, b)
}

const sightingTime = (s: StoredSighting) => s.last_seen_ms

export function mergeSightings(a: StoredSighting[], b: StoredSighting[], cutoffMs: number): StoredSighting[] {
  return mergeSightingLists(a, b, sightingTime, cutoffMs)
}

/** Merge two aggregates of one fingerprint. The newer observation's status and metadata win. */
export function mergeAggregates(a: Aggregate, b: Aggregate, cutoffMs: number): Aggregate {
  const newer = b.last_seen_ms > a.last_seen_ms || (b.last_seen_ms === a.last_seen_ms && b.count >= a.count) ? b : a
  const metadata = Object.keys(newer.metadata).length > 0 ? newer.metadata : a === newer ? b.metadata : a.metadata
  return {
    fingerprint: a.fingerprint,
    reported_status: newer.reported_status,
    first_seen_ms: Math.min(a.first_seen_ms, b.first_seen_ms),
    last_seen_ms: Math.max(a.last_seen_ms, b.last_seen_ms),
    count: Math.max(a.count, b.count),
    ips: mergeIps(a.ips, b.ips),
    ports: mergePorts(a.ports, b.ports),
    sightings: mergeSightings(a.sightings, b.sightings, cutoffMs),
    metadata,
  }
}

export function fromRow(row: FingerprintRow): Aggregate {
  return {
    fingerprint: row.fingerprint,
    reported_status: row.reported_status,
    first_seen_ms: Number(row.first_seen_ms),
    last_seen_ms: Number(row.last_seen_ms),
    count: Number(row.count),
    ips: JSON.parse(row.ips),
    ports: JSON.parse(row.ports),
    sightings: JSON.parse(row.sightings),
    metadata: JSON.parse(row.metadata),
  }
}

/** The oldest sighting's time (the retention sweep's index), or null. */
export function oldestSighting(a: Aggregate): number | null {
  const s = a.sightings
  if (s.length === 0) return null
  let min = s[0]!.last_seen_ms
  for (let i = 1; i < s.length; i++) if (s[i]!.last_seen_ms < min) min = s[i]!.last_seen_ms
  return min
}

// Texts that JSON writes as they are: the canonical addresses normalizeObservation produces.
const PLAIN_ADDRESS = /^[0-9A-Fa-f.:]{2,45}$/

/**
 * A sighting list as stored: `JSON.stringify` of each sighting's `ip`, `port` and `last_seen_ms`,
 * in that order, the same text byte for byte (tested). Quicker: a time of 13 digits is written as
 * two smaller integers, which V8 turns into text without its general double-to-text conversion
 * (that conversion was most of `JSON.stringify`'s time on a list of 128).
 */
export function encodeSightings(list: readonly StoredSighting[]): string {
  let out = '['
  for (let i = 0; i < list.length; i++) {
    const s = list[i]!
    const { ip, port, last_seen_ms: ms } = s
    if (i > 0) out += ','
    if (
      typeof ip === 'string' &&
      PLAIN_ADDRESS.test(ip) &&
      Number.isInteger(port) &&
      Number.isSafeInteger(ms) &&
      ms >= 1_000_000
    ) {
      const high = Math.floor(ms / 1_000_000)
      const low = ms - high * 1_000_000
      out += `{"ip":"${ip}","port":${port},"last_seen_ms":${high}${low < 100_000 ? String(low).padStart(6, '0') : low}}`
    } else out += JSON.stringify({ ip, port, last_seen_ms: ms })
  }
  return `${out}]`
}

export function toRow(instanceId: string, a: Aggregate, now: number): NewFingerprint {
  return {
    instance_id: instanceId,
    fingerprint: a.fingerprint,
    reported_status: a.reported_status,
    first_seen_ms: a.first_seen_ms,
    last_seen_ms: a.last_seen_ms,
    count: a.count,
    ips: JSON.stringify(a.ips),
    ports: JSON.stringify(a.ports),
    sightings: encodeSightings(a.sightings),
    oldest_sighting_ms: oldestSighting(a),
    metadata: JSON.stringify(a.metadata),
    updated_ms: now,
  }
}

/**
 * Whether every canonical address of `ips` is in the stored JSON array text (quoted tokens).
 * `encoded` is `JSON.stringify(ips)`: a gate that reports its whole set again, unchanged, sends
 * exactly the stored text (both are canonical), checked in one comparison.
 */
function ipsStored(text: string, ips: readonly string[], encoded: string): boolean {
  if (text === encoded) return true
  for (const x of ips) if (!text.includes(`"${x}"`)) return false
  return true
}

/** Whether `u`, a decoded stored sighting, comes strictly after `m` in the kit's sighting order. */
function after(u: unknown, m: StoredSighting): boolean {
  const s = u as StoredSighting
  if (s === null || typeof s !== 'object' || typeof s.ip !== 'string') return false
  if (typeof s.port !== 'number' || typeof s.last_seen_ms !== 'number') return false
  if (s.last_seen_ms !== m.last_seen_ms) return s.last_seen_ms < m.last_seen_ms
  const c = compareIps(s.ip, m.ip)
  return c > 0 || (c === 0 && s.port > m.port)
}

/**
 * `encodeSightings(b)` when the stored sightings merged with `b`'s are `b`'s own, else undefined,
 * found without decoding the stored text. The steady state of a busy fingerprint is a gate
 * uploading its 128 newest sightings, a few new, the rest already stored: the stored text then
 * opens with the tail of b's encoding (both are the same canonical order in the same encoding).
 * When it does, and everything stored after that tail comes after b's last sighting, every
 * stored sighting is either one of b's or cut by the 128-sighting bound: the merge is `b`.
 * Anything else (another encoding, an older upload, a short list) goes the long way; the test
 * suite checks both give the same row. `b` must be canonical, as every Aggregate's sightings
 * are (the output of mergeSightings), but may hold sightings this merge's cutoff drops.
 */
export function coveredSightings(stored: string, b: readonly StoredSighting[], cutoffMs: number): string | undefined {
  for (const s of b) if (!(s.last_seen_ms >= cutoffMs)) return undefined
  if (stored === '[]') return encodeSightings(b)
  let encoded: string | undefined
  const shared = sharedTail(stored, b, () => (encoded ??= encodeSightings(b)))
  if (shared === undefined || encoded === undefined) return undefined
  const { rest } = shared
  if (rest === ']') return encoded
  // Stored sightings beyond b's: dropped only if b holds the 128 the merge keeps.
  if (b.length < EDGE_LIMITS.perFingerprint || rest.charCodeAt(0) !== 44) return undefined
  let tail: unknown
  try {
    tail = JSON.parse(`[${rest.slice(1)}`)
  } catch {
    return undefined
  }
  if (!Array.isArray(tail)) return undefined
  const last = b[b.length - 1]!
  for (const u of tail) if (!after(u, last)) return undefined
  return encoded
}

/**
 * Where a stored list opens with the tail of `b` (canonical): the index in `b` of the stored
 * list's first sighting, from which on `b`'s encoding and the stored text are the same, and the
 * stored text after that shared part (`]`, or `,` and more sightings); undefined when the stored
 * list does not open that way. `encode()` gives `encodeSightings(b)`, asked for only once the
 * stored list's first sighting is found in `b` (a cheap look first).
 */
function sharedTail(
  stored: string,
  b: readonly StoredSighting[],
  encode: () => string,
): { index: number; rest: string } | undefined {
  if (!stored.startsWith('[{')) return undefined
  const firstEnd = stored.indexOf('}')
  if (firstEnd < 0) return undefined
  const firstText = stored.slice(1, firstEnd + 1)
  let first: StoredSighting
  try {
    first = JSON.parse(firstText)
  } catch {
    return undefined
  }
  const index = b.findIndex((s) => s.last_seen_ms === first.last_seen_ms && s.port === first.port && s.ip === first.ip)
  if (index < 0) return undefined
  const encoded = encode()
  // Where that sighting's text starts one of b's encoded entries (b's sightings are distinct, so
  // it is entry `index`).
  const p = encoded.indexOf(firstText)
  if (p < 1 || encoded.charCodeAt(p - 1) !== (p === 1 ? 91 : 44)) return undefined
  const shared = encoded.length - 1 - p
  // Compared as two slices: one memory comparison (startsWith compares character by character).
  if (stored.slice(1, 1 + shared) !== encoded.slice(p, -1)) return undefined
  return { index, rest: stored.slice(1 + shared) }
}

/**
 * The sightings of `b` (canonical) not in the stored list `stored` (its text; undefined: nothing
 * stored), compared by address, port and time. In the steady state (the stored list opens with
 * b's tail, as in coveredSightings) they are the ones before that tail, found without decoding
 * the stored list; otherwise the stored list is decoded. A stored list out of the rule's order
 * (not written here) may make this more than the new ones: recording them twice is harmless.
 */
export function freshSightings(stored: string | undefined, b: readonly StoredSighting[]): StoredSighting[] {
  if (stored === undefined || b.length === 0) return [...b]
  const shared = sharedTail(stored, b, () => encodeSightings(b))
  if (shared !== undefined && (shared.rest === ']' || shared.rest.charCodeAt(0) === 44)) return b.slice(0, shared.index)
  let decoded: unknown
  try {
    decoded = JSON.parse(stored)
  } catch {
    return [...b]
  }
  if (!Array.isArray(decoded)) return [...b]
  const known = new Set<string>()
  for (const x of decoded as StoredSighting[])
    if (x !== null && typeof x === 'object') known.add(`${x.ip}|${x.port}|${x.last_seen_ms}`)
  return b.filter((s) => !known.has(`${s.ip}|${s.port}|${s.last_seen_ms}`))
}

/** Whether every port is in the stored JSON array text of integers. */
function portsStored(text: string, ports: readonly number[]): boolean {
  if (ports.length === 0) return true
  const list = `,${text.slice(1, -1)},`
  for (const p of ports) if (!list.includes(`,${p},`)) return false
  return true
}

/**
 * `toRow(instanceId, mergeAggregates(fromRow(row), b, cutoffMs), now)`, without decoding
 * and re-encoding the stored columns the merge leaves as they are: the IP and port sets
 * when `b` adds nothing to them (stored sets are canonical: sorted, distinct, capped), and
 * the metadata, which is either kept or replaced whole. Tested equal to the long form.
 */
export function mergeIntoRow(
  instanceId: string,
  row: FingerprintRow,
  b: Aggregate,
  cutoffMs: number,
  now: number,
): NewFingerprint {
  const aLast = Number(row.last_seen_ms)
  const aCount = Number(row.count)
  const bNewer = b.last_seen_ms > aLast || (b.last_seen_ms === aLast && b.count >= aCount)
  const bHasMetadata = Object.keys(b.metadata).length > 0
  const metadata = bNewer
    ? bHasMetadata
      ? JSON.stringify(b.metadata)
      : row.metadata
    : row.metadata !== '{}' || !bHasMetadata
      ? row.metadata
      : JSON.stringify(b.metadata)
  const covered = coveredSightings(row.sightings, b.sightings, cutoffMs)
  const sightings =
    covered !== undefined ? b.sightings : mergeSightings(JSON.parse(row.sightings), b.sightings, cutoffMs)
  const merged = { sightings } as Aggregate
  return {
    instance_id: instanceId,
    fingerprint: row.fingerprint,
    reported_status: bNewer ? b.reported_status : row.reported_status,
    first_seen_ms: Math.min(Number(row.first_seen_ms), b.first_seen_ms),
    last_seen_ms: Math.max(aLast, b.last_seen_ms),
    count: Math.max(aCount, b.count),
    ips: ipsStored(row.ips, b.ips, JSON.stringify(b.ips))
      ? row.ips
      : JSON.stringify(mergeIps(JSON.parse(row.ips), b.ips)),
    ports: portsStored(row.ports, b.ports) ? row.ports : JSON.stringify(mergePorts(JSON.parse(row.ports), b.ports)),
    sightings: covered ?? encodeSightings(sightings),
    oldest_sighting_ms: oldestSighting(merged),
    metadata,
    updated_ms: now,
  }
}
