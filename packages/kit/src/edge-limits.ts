/**
 * The edge protocol's limits and identifier patterns (spec edge-gate.md, "Limits"), apart from
 * the TypeBox schemas in edge-wire.ts: gates and the control plane's CLI check them without
 * compiling the wire schemas (about 0.2 s at start-up); and the merge rules of a fingerprint's IP,
 * port and sighting sets, one implementation for the SSH gate and the control plane.
 */
import { parseDuration } from './durations.ts'
import { parseIp } from './net.ts'

/** Limits from the spec's "Limits" table. */
export const EDGE_LIMITS = {
  /** Fingerprints per observation upload (the gates' page size). */
  pageSize: 16,
  /** IPs, ports and sightings per fingerprint. */
  perFingerprint: 128,
  /** Encoded fingerprint metadata, bytes (UTF-8 JSON). */
  metadataBytes: 64 * 1024,
  /** Signals per signal batch (ours). */
  signalsPerBatch: 500,
} as const

/**
 * How long a decision made for a while may last (`--for`, `expires_in`): from a minute (shorter
 * is a typo, and the control plane's expiry sweep runs every 10 s) to a year (longer is for good).
 */
export const DECISION_EXPIRY_MS = { min: 60_000, max: 8760 * 3_600_000 } as const

/** `4h` to milliseconds when it is a duration within `DECISION_EXPIRY_MS`; undefined otherwise. */
export function parseDecisionExpiry(text: string): number | undefined {
  let ms: number
  try {
    ms = parseDuration(text)
  } catch {
    return undefined
  }
  return ms >= DECISION_EXPIRY_MS.min && ms <= DECISION_EXPIRY_MS.max ? ms : undefined
}

/** RFC 3339 timestamps: one pattern, in timestamps.ts (any offset is read; Z is written). */
export { TIMESTAMP_PATTERN } from './timestamps.ts'

/** A stable instance name: letters, digits, `.`, `_`, `-`; starts with a letter or digit. */
export const INSTANCE_ID_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$'

/** A fingerprint identifier: 32 hex characters for the SSH gate, JA4-like strings for TLS gates. */
export const FINGERPRINT_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_.:+-]{0,255}$'

// The merge rules of one fingerprint's sets (spec "Limits"), shared by the SSH gate's store and
// the control plane's aggregates so both keep the same 128 values, ties included. Each rule is a
// join (commutative, associative, idempotent) on values that are equal when their keys are.

const MAX = EDGE_LIMITS.perFingerprint
const DOTTED_QUAD = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'))
// Sort keys ("4" + 8 hex digits, "6" + 32, "9" + text for what is not an address), memoised:
// sorting compares the same few addresses many times (the control plane's ingest hot path).
const sortKeys = new Map<string, string>()

function sortKey(address: string): string {
  let key = sortKeys.get(address)
  if (key === undefined) {
    if (DOTTED_QUAD.test(address)) {
      const [a, b, c, d] = address.split('.').map(Number) as [number, number, number, number]
      key = `4${HEX[a]}${HEX[b]}${HEX[c]}${HEX[d]}`
    } else {
      try {
        const bytes = parseIp(address).toByteArray()
        key = (bytes.length === 4 ? '4' : '6') + bytes.map((b) => HEX[b]).join('')
      } catch {
        key = `9${address}`
      }
    }
    if (sortKeys.size >= 50_000) sortKeys.clear()
    sortKeys.set(address, key)
  }
  return key
}

/**
 * The value of a dotted quad as `DOTTED_QUAD` accepts it (four decimal octets, none above 255,
 * no leading zeros), or -1 for any other text.
 */
function dottedQuad(text: string): number {
  const n = text.length
  if (n < 7 || n > 15) return -1
  let value = 0
  let octet = 0
  let digits = 0
  let dots = 0
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i)
    if (c === 46) {
      if (digits === 0 || dots === 3) return -1
      value = value * 256 + octet
      octet = 0
      digits = 0
      dots++
    } else if (c >= 48 && c <= 57) {
      // A leading zero is an octet of its own ("0"), never the first digit of a longer one.
      if (digits === 1 && octet === 0) return -1
      octet = octet * 10 + (c - 48)
      if (++digits > 3 || octet > 255) return -1
    } else return -1
  }
  if (digits === 0 || dots !== 3) return -1
  return value * 256 + octet
}

/**
 * The order of addresses in a fingerprint's sets: IPv4 before IPv6, each numeric; text that is
 * not an address (only in rows written by other versions) last, in text order.
 *
 * @example ['::1', '10.0.0.2', '9.0.0.1'].sort(compareIps) // ['9.0.0.1', '10.0.0.2', '::1']
 */
export function compareIps(a: string, b: string): number {
  if (a === b) return 0
  // Two dotted quads, the common case, compare by value without the memo: a gate reports far
  // more distinct addresses than the memo keeps, so its lookups mostly missed (measured: 2.4 µs
  // an observation of two addresses, docs/performance/edgegate.md).
  const v = dottedQuad(a)
  if (v >= 0) {
    const w = dottedQuad(b)
    if (w >= 0) return v < w ? -1 : v > w ? 1 : 0
  }
  const x = sortKey(a)
  const y = sortKey(b)
  return x < y ? -1 : x > y ? 1 : 0
}

/** The distinct values of `a` then `b` (a fresh array). */
function distinct<T>(a: readonly T[], b: readonly T[]): T[] {
  if (a.length + b.length <= 8) {
    // A handful of values (a fresh observation): linear scans beat building a Set.
    const out: T[] = []
    for (const x of a) if (!out.includes(x)) out.push(x)
    for (const x of b) if (!out.includes(x)) out.push(x)
    return out
  }
  const set = new Set(a)
  for (const x of b) set.add(x)
  return [...set]
}

/** Whether every value comes strictly after the one before it (so the values are distinct too). */
function increasing<T>(xs: readonly T[], compare: (x: T, y: T) => number): boolean {
  for (let i = 1; i < xs.length; i++) if (!(compare(xs[i - 1]!, xs[i]!) < 0)) return false
  return true
}

const comparePorts = (x: number, y: number) => x - y

/** The IP set rule: distinct addresses in `compareIps` order, the first 128 kept. */
export function mergeIpSet(a: readonly string[], b: readonly string[]): string[] {
  // A gate's set arrives as it keeps it, in this order already: one pass, no set or sort.
  if (a.length === 0 && increasing(b, compareIps)) return b.slice(0, MAX)
  const out = distinct(a, b)
  if (out.length > 1) out.sort(compareIps)
  if (out.length > MAX) out.length = MAX
  return out
}

/** The port set rule: distinct ports in numeric order, the first 128 kept. */
export function mergePortSet(a: readonly number[], b: readonly number[]): number[] {
  if (a.length === 0 && increasing(b, comparePorts)) return b.slice(0, MAX)
  const out = distinct(a, b)
  if (out.length > 1) out.sort(comparePorts)
  if (out.length > MAX) out.length = MAX
  return out
}

export interface SightingLike {
  ip: string
  port: number
}

/**
 * The sighting rule: one sighting per IP/port pair, the newest (at the same instant the one in
 * `b`, the later report, replaces the one in `a`); sightings older than `cutoffMs` dropped; then
 * newest first, ties broken by IP (`compareIps`) and port, and the first 128 kept. `time` gives a
 * sighting's instant in milliseconds (the apps store it as a number or as RFC 3339 text).
 */
export function mergeSightingLists<S extends SightingLike>(
  a: readonly S[],
  b: readonly S[],
  time: (s: S) => number,
  cutoffMs = Number.NEGATIVE_INFINITY,
): S[] {
  const n = a.length + b.length
  const at = (i: number) => (i < a.length ? a[i]! : b[i - a.length]!)
  // A pair's key: a number (the address's value and the port) when every sighting has a dotted
  // quad and a port in range, as the gates report; otherwise the text `ip|port`. Both key the
  // same pairs; the number saves building and hashing a string per sighting (a stored
  // fingerprint's 128 merged with an upload's 128 on every upload: the control plane's ingest).
  const keys = new Array<number | string>(n)
  for (let i = 0; i < n; i++) {
    const s = at(i)
    const v =
      typeof s.port === 'number' && Number.isInteger(s.port) && s.port >= 0 && s.port <= 65535 ? dottedQuad(s.ip) : -1
    if (v < 0) {
      for (let j = 0; j < n; j++) keys[j] = `${at(j).ip}|${at(j).port}`
      break
    }
    keys[i] = v * 65536 + s.port
  }
  // The newest sighting per pair, in the position where the pair first came (a, then b); at the
  // same instant the later one.
  const slot = new Map<number | string, number>()
  const kept: S[] = []
  const times: number[] = []
  for (let i = 0; i < n; i++) {
    const s = at(i)
    const t = time(s)
    if (!(t >= cutoffMs)) continue
    const k = slot.get(keys[i]!)
    if (k === undefined) {
      slot.set(keys[i]!, kept.length)
      kept.push(s)
      times.push(t)
    } else if (times[k]! <= t) {
      kept[k] = s
      times[k] = t
    }
  }
  // Newest first, then by address and port; pairs that compare equal (two texts of one address)
  // keep their position (a stable order).
  const before = (x: number, y: number) =>
    times[y]! - times[x]! || compareIps(kept[x]!.ip, kept[y]!.ip) || kept[x]!.port - kept[y]!.port
  const m = kept.length
  // Two stored lists are each in that order already, so `kept` is usually one or two ordered
  // runs: merged in one pass, without sorting.
  let run = 1
  while (run < m && before(run - 1, run) <= 0) run++
  if (run === m) {
    if (m > MAX) kept.length = MAX
    return kept
  }
  let end = run + 1
  while (end < m && before(end - 1, end) <= 0) end++
  const out: S[] = []
  if (end === m) {
    let i = 0
    let j = run
    while (out.length < MAX && (i < run || j < m))
      out.push(kept[j === m || (i < run && before(i, j) <= 0) ? i++ : j++]!)
    return out
  }
  const order = Array.from({ length: m }, (_, i) => i).sort(before)
  for (let i = 0; i < m && i < MAX; i++) out.push(kept[order[i]!]!)
  return out
}
