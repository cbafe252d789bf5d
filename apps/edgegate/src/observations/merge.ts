/**
 * Observation merge rules (spec "Limits"): IP and port sets keep the first 128 values in
 * sorted order; sightings keep the IP/port pairing and the 128 most recent; counts are
 * the gate's running totals, so the larger wins. Every rule is a join (commutative,
 * associative, idempotent): a re-sent page changes nothing.
 */
import { EDGE_LIMITS, normalizeIp, type Observation, parseIp } from '@gatehouse/kit'
import type { FingerprintRow, NewFingerprint } from '../db/schema.ts'
import { errors } from '../errors.ts'
import { parseMillis } from '../timestamps.ts'

const MAX = EDGE_LIMITS.perFingerprint

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

function time(text: string, field: string): number {
  const ms = parseMillis(text)
  if (ms === undefined) throw errors.invalid_timestamp(field)
  return ms
}

const DOTTED_QUAD = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/

function ip(text: string, field: string): string {
  // Plain dotted quads are already canonical: skip the general parser (the ingest hot path).
  if (DOTTED_QUAD.test(text)) return text
  try {
    return normalizeIp(text)
  } catch {
    throw errors.invalid_ip(field)
  }
}

// Sort keys of canonical addresses ("4" + 8 hex digits, "6" + 32), memoised: sorting
// compares the same few addresses many times.
const sortKeys = new Map<string, string>()

function sortKey(address: string): string {
  let key = sortKeys.get(address)
  if (key === undefined) {
    const bytes = parseIp(address).toByteArray()
    key = (bytes.length === 4 ? '4' : '6') + bytes.map((b) => b.toString(16).padStart(2, '0')).join('')
    if (sortKeys.size >= 50_000) sortKeys.clear()
    sortKeys.set(address, key)
  }
  return key
}

/** Numeric address order, IPv4 before IPv6 (addresses already canonical). */
export function compareIps(a: string, b: string): number {
  if (a === b) return 0
  const x = sortKey(a)
  const y = sortKey(b)
  return x < y ? -1 : x > y ? 1 : 0
}

/** Validate one observation beyond its schema; throws a 4xx AppError naming the field. */
export function normalizeObservation(o: Observation, index: number, cutoffMs: number): Aggregate {
  const at = `observations[${index}]`
  const first = time(o.first_seen, `${at}.first_seen`)
  const last = time(o.last_seen, `${at}.last_seen`)
  if (first > last) throw errors.invalid_observation(`${at}: first_seen is after last_seen`)
  // A plain object whatever the parser produced (own keys only).
  const metadata: Record<string, string> = Object.fromEntries(Object.entries(o.metadata ?? {}))
  if (Buffer.byteLength(JSON.stringify(metadata)) > EDGE_LIMITS.metadataBytes) {
    throw errors.metadata_too_large(EDGE_LIMITS.metadataBytes)
  }
  const ips = o.ips.map((x, i) => ip(x, `${at}.ips[${i}]`))
  const sightings = o.sightings.map((s, i) => ({
    ip: ip(s.ip, `${at}.sightings[${i}].ip`),
    port: s.port,
    last_seen_ms: time(s.last_seen, `${at}.sightings[${i}].last_seen`),
  }))
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

export function mergeIps(a: string[], b: string[]): string[] {
  return [...new Set([...a, ...b])].sort(compareIps).slice(0, MAX)
}

export function mergePorts(a: number[], b: number[]): number[] {
  return [...new Set([...a, ...b])].sort((x, y) => x - y).slice(0, MAX)
}

export function mergeSightings(a: StoredSighting[], b: StoredSighting[], cutoffMs: number): StoredSighting[] {
  const byPair = new Map<string, StoredSighting>()
  for (const s of [...a, ...b]) {
    if (s.last_seen_ms < cutoffMs) continue
    const key = `${s.ip}|${s.port}`
    const prev = byPair.get(key)
    if (!prev || prev.last_seen_ms < s.last_seen_ms) byPair.set(key, s)
  }
  return [...byPair.values()]
    .sort((x, y) => y.last_seen_ms - x.last_seen_ms || compareIps(x.ip, y.ip) || x.port - y.port)
    .slice(0, MAX)
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
    sightings: JSON.stringify(a.sightings),
    oldest_sighting_ms: a.sightings.length ? Math.min(...a.sightings.map((s) => s.last_seen_ms)) : null,
    metadata: JSON.stringify(a.metadata),
    updated_ms: now,
  }
}
