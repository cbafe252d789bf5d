/**
 * Records of a Cloudflare-style DNS API and their canonical form: the owner name relative to the
 * zone (`@` for the apex), the RDATA in dnsctl's canonical presentation (names absolute with the
 * trailing dot, the same text the zone API uses), and the provider attributes (`proxied`,
 * `comment`, `tags`). The synthetic revision hashes every record of the zone.
 */
import { createHash } from 'node:crypto'
import { decodeCharString, encodeCharString } from '../zonefile/charstring.ts'
import { isRecordType, lexRecord, parseRdata, type RecordType, ZoneError } from '../zonefile/index.ts'

/** Types the provider endpoints handle (the spec's list; SOA is the provider's own). */
export const PROVIDER_TYPES = ['A', 'AAAA', 'CAA', 'CNAME', 'MX', 'NS', 'SRV', 'TXT'] as const

/** A record as the provider API answers it. */
export interface ApiRecord {
  id: string
  name: string
  type: string
  content?: string
  ttl: number
  proxied?: boolean
  comment?: string | null
  tags?: string[]
  priority?: number
  data?: Record<string, unknown>
}

export interface Attributes {
  proxied: boolean
  comment: string | null
  tags: string[]
}

export interface ProviderRecord extends Attributes {
  id: string
  /** Relative owner name; `@` for the apex. */
  name: string
  type: RecordType
  /** 1 is the provider's "automatic". */
  ttl: number
  /** Canonical RDATA. */
  value: string
}

const PROXIABLE = new Set(['A', 'AAAA', 'CNAME'])
export function proxiable(type: string): boolean {
  return PROXIABLE.has(type)
}

function fqdn(name: string): string {
  return name.endsWith('.') ? name.toLowerCase() : `${name.toLowerCase()}.`
}

function bare(name: string): string {
  return name.replace(/\.$/, '')
}

/** Canonical RDATA of a value written in presentation format (absolute names; no origin). */
export function canonicalValue(type: RecordType, text: string, zone: string): string {
  return parseRdata(type, lexRecord(text), `${zone}.`)
}

function quote(text: string): string {
  return encodeCharString(new TextEncoder().encode(text))
}

/** Presentation text of a provider API record's data. */
function presentation(r: ApiRecord): string {
  const d = r.data ?? {}
  switch (r.type) {
    case 'CNAME':
    case 'NS':
      return fqdn(r.content ?? '')
    case 'MX':
      return `${r.priority ?? 0} ${fqdn(r.content ?? '')}`
    case 'SRV':
      return r.data
        ? `${d.priority} ${d.weight} ${d.port} ${fqdn(String(d.target))}`
        : `${r.priority ?? 0} ${r.content ?? ''}.`
    case 'CAA':
      return r.data ? `${d.flags} ${d.tag} ${quote(String(d.value))}` : (r.content ?? '')
    case 'TXT': {
      const c = r.content ?? ''
      return c.startsWith('"') ? c : quote(c)
    }
    default:
      return r.content ?? ''
  }
}

function relative(name: string, zone: string): string {
  const n = bare(name.toLowerCase())
  if (n === zone) return '@'
  if (!n.endsWith(`.${zone}`)) throw new Error(`record name ${name} is outside zone ${zone}`)
  return n.slice(0, -(zone.length + 1))
}

/** Absolute name (no trailing dot) of a relative owner name. */
export function absoluteName(name: string, zone: string): string {
  return name === '@' ? zone : `${name}.${zone}`
}

/** The canonical form of one API record, or undefined for a type the endpoints do not handle (SOA...). */
export function fromApi(r: ApiRecord, zone: string): ProviderRecord | undefined {
  if (!isRecordType(r.type) || !(PROVIDER_TYPES as readonly string[]).includes(r.type)) return undefined
  let value: string
  try {
    value = canonicalValue(r.type, presentation(r), zone)
  } catch (err) {
    const why = err instanceof ZoneError ? err.message : String(err)
    throw new Error(`the provider answered record ${r.id} (${r.type}) that does not parse: ${why}`)
  }
  return {
    id: r.id,
    name: relative(r.name, zone),
    type: r.type,
    ttl: r.ttl,
    value,
    proxied: r.proxied === true,
    comment: r.comment ?? null,
    tags: [...(r.tags ?? [])].sort(),
  }
}

/** The body the provider API takes to create (or put) a record. */
export function toApi(
  zone: string,
  rec: { name: string; type: RecordType; ttl: number; value: string } & Attributes,
): Record<string, unknown> {
  const body: Record<string, unknown> = {
    name: absoluteName(rec.name, zone),
    type: rec.type,
    ttl: rec.ttl,
    comment: rec.comment,
    tags: rec.tags,
  }
  if (proxiable(rec.type)) body.proxied = rec.proxied
  const parts = rec.value.split(' ')
  switch (rec.type) {
    case 'CNAME':
    case 'NS':
      body.content = bare(rec.value)
      break
    case 'MX':
      body.priority = Number(parts[0])
      body.content = bare(parts[1]!)
      break
    case 'SRV':
      body.data = {
        priority: Number(parts[0]),
        weight: Number(parts[1]),
        port: Number(parts[2]),
        target: bare(parts[3]!),
      }
      break
    case 'CAA': {
      const quoted = parts.slice(2).join(' ')
      const value = new TextDecoder().decode(decodeCharString(quoted.slice(1, -1)))
      body.data = { flags: Number(parts[0]), tag: parts[1], value }
      break
    }
    default:
      body.content = rec.value
  }
  return body
}

/** The synthetic revision: a hash of every record (IDs, data and attributes) in a stable order. */
export function revisionOf(records: readonly ProviderRecord[]): string {
  const rows = records
    .map((r) => [r.id, r.name, r.type, r.ttl, r.value, r.proxied, r.comment, r.tags])
    .sort((a, b) => (String(a[0]) < String(b[0]) ? -1 : 1))
  return createHash('sha256').update(JSON.stringify(rows)).digest('base64url').slice(0, 27)
}
