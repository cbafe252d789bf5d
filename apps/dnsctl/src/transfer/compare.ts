/**
 * What the zone-transfer job derives from transferred records: the earliest RRSIG expiry, and a
 * record-level comparison of two copies of a zone (primary and secondary) in a canonical form
 * (lower-case owner, type, TTL left out: a TTL difference is not a data mismatch).
 */
import type dnsPacket from 'dns-packet'

export function earliestRrsigExpiry(records: readonly dnsPacket.Answer[]): Date | null {
  let min: number | null = null
  for (const r of records) {
    if (r.type !== 'RRSIG') continue
    const exp = (r.data as { expiration: number }).expiration
    if (min === null || exp < min) min = exp
  }
  return min === null ? null : new Date(min * 1000)
}

function canonical(r: dnsPacket.Answer): string {
  const data = (r as { data?: unknown }).data
  const text = Buffer.isBuffer(data)
    ? data.toString('hex')
    : JSON.stringify(data, (_, v) => (v?.type === 'Buffer' ? Buffer.from(v.data).toString('hex') : v))
  return `${r.name.toLowerCase()} ${r.type} ${text}`
}

export interface Comparison {
  primarySerial: number | undefined
  secondarySerial: number | undefined
  onlyPrimary: string[]
  onlySecondary: string[]
  mismatches: number
}

function serial(records: readonly dnsPacket.Answer[]): number | undefined {
  const soa = records.find((r) => r.type === 'SOA') as dnsPacket.SoaAnswer | undefined
  return soa?.data.serial
}

export function compareZones(primary: readonly dnsPacket.Answer[], secondary: readonly dnsPacket.Answer[]): Comparison {
  const a = new Set(primary.map(canonical))
  const b = new Set(secondary.map(canonical))
  const onlyPrimary = [...a].filter((x) => !b.has(x))
  const onlySecondary = [...b].filter((x) => !a.has(x))
  const primarySerial = serial(primary)
  const secondarySerial = serial(secondary)
  // The SOA line differs with the serial; it is counted once, as the serial mismatch.
  return {
    primarySerial,
    secondarySerial,
    onlyPrimary,
    onlySecondary,
    mismatches: onlyPrimary.length + onlySecondary.length,
  }
}
