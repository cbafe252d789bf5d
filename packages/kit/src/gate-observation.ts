/**
 * Turning a gate entry into the wire `Observation` (kit's edge-wire schema): bounded to the
 * spec's limits, IP/port pairing kept, the gate's verdict as `status` (`unknown` until
 * someone decided, `pending` past its expiry), and the gate's metadata (KEXINIT lists, or sni/ja3/ja4) as strings.
 */
import { EDGE_LIMITS } from './edge-limits.ts'
import type { Observation } from './edge-wire.ts'
import { gateStatusOf } from './gate-verdict.ts'

/** The fields of a gate's stored entry the upload needs (sshproxy's and tlsgate's entries have them). */
export interface GateEntry {
  fingerprint: string
  verdict: 'approved' | 'blocked' | 'pending'
  /** Null while nobody (operator or control plane) has decided: uploaded as `unknown`. */
  decided_at: string | null
  /** Past it, the verdict is uploaded as `pending`, as the gate applies it. */
  expires_at: string | null
  first_seen: string
  last_seen: string
  count: number
  ips: string[]
  ports: number[]
  sightings: Array<{ ip: string; port: number; last_seen: string }>
  metadata: Record<string, unknown>
}

const KEY = /^[a-z][a-z0-9_]{0,63}$/

function metadataOf(raw: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {}
  let size = 2
  for (const [k, v] of Object.entries(raw)) {
    if (!KEY.test(k) || Object.keys(out).length >= 32) continue
    const text = Array.isArray(v)
      ? v.map(String).join(',')
      : typeof v === 'object' && v !== null
        ? JSON.stringify(v)
        : String(v)
    const cost = Buffer.byteLength(JSON.stringify(k)) + Buffer.byteLength(JSON.stringify(text)) + 2
    if (size + cost > EDGE_LIMITS.metadataBytes) continue
    size += cost
    out[k] = text
  }
  return out
}

/** Wire times are RFC 3339 UTC with `Z`; the gate stores the same, normalised here in case. */
function utc(text: string): string {
  const ms = Date.parse(text)
  return Number.isNaN(ms) ? text : new Date(ms).toISOString()
}

export function toObservation(entry: GateEntry): Observation {
  const max = EDGE_LIMITS.perFingerprint
  return {
    fingerprint: entry.fingerprint,
    status: entry.decided_at === null ? 'unknown' : gateStatusOf(entry, Date.now()),
    first_seen: utc(entry.first_seen),
    last_seen: utc(entry.last_seen),
    ips: entry.ips.slice(0, max),
    ports: entry.ports.slice(0, max),
    sightings: [...entry.sightings]
      .sort((a, b) => (a.last_seen < b.last_seen ? 1 : a.last_seen > b.last_seen ? -1 : 0))
      .slice(0, max)
      .map((s) => ({ ip: s.ip, port: s.port, last_seen: utc(s.last_seen) })),
    count: entry.count,
    metadata: metadataOf(entry.metadata),
  }
}
