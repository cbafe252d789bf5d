/**
 * A gate entry's bounded JSON sets (IPs, ports, sightings) and metadata as both gates store
 * them: decoding what may be damaged or written by another version, and merging new
 * observations within the spec's limits (edge-limits.ts). Re-exported by gate-store.ts.
 */
import { EDGE_LIMITS, mergeIpSet, mergePortSet, mergeSightingLists } from './edge-limits.ts'

/** A sighting as a gate stores it; a gate may add fields (sshproxy: its relay's address). */
export interface StoredSighting {
  ip: string
  port: number
  last_seen: string
}

/** An entry's three bounded JSON sets, as stored. */
export interface StoredSets {
  ips: string
  ports: string
  sightings: string
}

/** A stored entry's sets and metadata, decoded. */
export interface DecodedSets<S extends StoredSighting> {
  ips: string[]
  ports: number[]
  sightings: S[]
  metadata: Record<string, unknown>
}

const isString = (x: unknown): x is string => typeof x === 'string'
const isPort = (x: unknown): x is number => Number.isInteger(x) && (x as number) >= 0 && (x as number) <= 65535
const isSighting = (x: unknown): x is StoredSighting => {
  const s = x as StoredSighting
  return s !== null && typeof s === 'object' && isString(s.ip) && isPort(s.port) && isString(s.last_seen)
}
const sightingTime = (s: StoredSighting) => Date.parse(s.last_seen)

/** A stored JSON array's elements that pass `keep`; anything that is not an array reads as empty. */
function parseArray<T>(json: string, keep: (x: unknown) => x is T): T[] {
  try {
    const v: unknown = JSON.parse(json)
    return Array.isArray(v) ? v.filter(keep) : []
  } catch {
    return []
  }
}

/** Decode an entry's sets and metadata; trimmed or damaged JSON reads as empty, never as an error. */
export function decodeStoredSets<S extends StoredSighting = StoredSighting>(
  row: StoredSets & { metadata: string },
): DecodedSets<S> {
  let metadata: Record<string, unknown> = {}
  try {
    const v: unknown = JSON.parse(row.metadata)
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) metadata = v as Record<string, unknown>
  } catch {
    // trimmed or damaged metadata reads as empty
  }
  return {
    ips: parseArray(row.ips, isString),
    ports: parseArray(row.ports, isPort),
    sightings: parseArray(row.sightings, isSighting) as S[],
    metadata,
  }
}

/**
 * The newest sighting per IP and port (at the same instant the added one), newest first, the 128
 * most recent kept. Times compare as instants: RFC 3339 texts with other fraction digits do not
 * sort as text.
 */
export function mergeSightings<S extends StoredSighting>(existing: readonly S[], added: readonly S[]): S[] {
  return mergeSightingLists(existing, added, sightingTime)
}

/**
 * An entry's sets with `added` sightings merged in (`stored` undefined: a new entry), under the
 * kit's set rules (edge-limits.ts, shared with the control plane): 128 IPs and ports each, the
 * first in sorted order, and the 128 most recent sightings. Also brings sets written by other
 * versions within those bounds (`added` empty).
 */
export function mergeStoredSets<S extends StoredSighting>(
  stored: StoredSets | undefined,
  added: readonly S[],
): StoredSets {
  const old = stored ? decodeStoredSets<S>({ ...stored, metadata: '{}' }) : undefined
  const ips = added.map((s) => s.ip)
  const ports = added.map((s) => s.port)
  return {
    ips: JSON.stringify(mergeIpSet(old?.ips ?? [], ips)),
    ports: JSON.stringify(mergePortSet(old?.ports ?? [], ports)),
    sightings: JSON.stringify(mergeSightings(old?.sightings ?? [], added)),
  }
}

/** Metadata over the spec's 64 KiB is dropped (`{}`): never possible from one handshake, bounded anyway. */
export function boundMetadata(json: string): string {
  return Buffer.byteLength(json, 'utf8') > EDGE_LIMITS.metadataBytes ? '{}' : json
}
