/**
 * The spec's bounds on one stored fingerprint entry: at most 128 IPs, ports and sightings
 * (sightings keep the 128 most recent; the IP and port sets keep the first 128 values in
 * sorted order) and encoded metadata of at most 64 KiB.
 */
import { parseIp } from '@gatehouse/kit/net.ts'

export const MAX_VALUES = 128
export const MAX_METADATA_BYTES = 64 * 1024

export interface Sighting {
  ip: string
  port: number
  last_seen: string
  /** Local port of the gate's connection to the backend: sshd logs `from <gate> port <relay_port>`. */
  relay_port?: number
  /** Local address of that connection (what sshd logs as the peer). */
  relay_ip?: string
}

/** IPv4 before IPv6, each in numeric order; text that is not an address sorts last. */
export function compareIps(a: string, b: string): number {
  const ka = ipKey(a)
  const kb = ipKey(b)
  if (ka === undefined || kb === undefined) {
    if (ka === kb) return a < b ? -1 : a > b ? 1 : 0
    return ka === undefined ? 1 : -1
  }
  if (ka.length !== kb.length) return ka.length - kb.length
  for (let i = 0; i < ka.length; i++) if (ka[i] !== kb[i]) return ka[i]! - kb[i]!
  return 0
}

function ipKey(text: string): number[] | undefined {
  try {
    return parseIp(text).toByteArray()
  } catch {
    return undefined
  }
}

export function mergeIps(existing: readonly string[], added: Iterable<string>): string[] {
  return [...new Set([...existing, ...added])].sort(compareIps).slice(0, MAX_VALUES)
}

export function mergePorts(existing: readonly number[], added: Iterable<number>): number[] {
  return [...new Set([...existing, ...added])].sort((a, b) => a - b).slice(0, MAX_VALUES)
}

/** One sighting per IP/port pair, newest first, the 128 most recent kept. */
export function mergeSightings(existing: readonly Sighting[], added: readonly Sighting[]): Sighting[] {
  const byPair = new Map<string, Sighting>()
  for (const s of [...existing, ...added]) {
    const key = `${s.ip}|${s.port}`
    const prev = byPair.get(key)
    if (!prev || prev.last_seen <= s.last_seen) byPair.set(key, s)
  }
  return [...byPair.values()]
    .sort((a, b) => (a.last_seen < b.last_seen ? 1 : a.last_seen > b.last_seen ? -1 : 0))
    .slice(0, MAX_VALUES)
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
