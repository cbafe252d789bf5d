/**
 * The spec's bounds on one stored fingerprint entry: at most 128 IPs, ports and sightings
 * (sightings keep the 128 most recent; the IP and port sets keep the first 128 values in
 * sorted order) and encoded metadata of at most 64 KiB.
 */
import { compareIps, EDGE_LIMITS, mergeIpSet, mergePortSet, mergeSightingLists } from '@gatehouse/kit/edge-limits.ts'

export const MAX_VALUES = EDGE_LIMITS.perFingerprint
export const MAX_METADATA_BYTES = EDGE_LIMITS.metadataBytes

export interface Sighting {
  ip: string
  port: number
  last_seen: string
  /** Local port of the gate's connection to the backend: sshd logs `from <gate> port <relay_port>`. */
  relay_port?: number
  /** Local address of that connection (what sshd logs as the peer). */
  relay_ip?: string
}

// The set rules are the kit's (packages/kit/src/edge-limits.ts), shared with the control plane
// so both keep the same 128 values, ties included.

/** IPv4 before IPv6, each in numeric order; text that is not an address sorts last. */
export { compareIps }

export function mergeIps(existing: readonly string[], added: Iterable<string>): string[] {
  return mergeIpSet(existing, [...added])
}

export function mergePorts(existing: readonly number[], added: Iterable<number>): number[] {
  return mergePortSet(existing, [...added])
}

const sightingTime = (s: Sighting) => Date.parse(s.last_seen)

/**
 * One sighting per IP/port pair (the newest; at the same instant the added one), newest first,
 * the 128 most recent kept. Times are compared as instants: RFC 3339 texts with different
 * fraction digits do not sort as text.
 */
export function mergeSightings(existing: readonly Sighting[], added: readonly Sighting[]): Sighting[] {
  return mergeSightingLists(existing, added, sightingTime)
}

/** Metadata over the limit (only possible in databases written by other versions) is dropped. */
export function boundMetadata(json: string): string {
  return Buffer.byteLength(json, 'utf8') > MAX_METADATA_BYTES ? '{}' : json
}

/** Parse a stored JSON array, treating anything else as empty. */
export function parseArray<T>(json: string, keep: (x: unknown) => x is T): T[] {
  try {
    const v: unknown = JSON.parse(json)
    return Array.isArray(v) ? v.filter(keep) : []
  } catch {
    return []
  }
}

export const isString = (x: unknown): x is string => typeof x === 'string'
export const isPort = (x: unknown): x is number => Number.isInteger(x) && (x as number) >= 0 && (x as number) <= 65535
export const isSighting = (x: unknown): x is Sighting => {
  const s = x as Sighting
  return s !== null && typeof s === 'object' && isString(s.ip) && isPort(s.port) && isString(s.last_seen)
}
