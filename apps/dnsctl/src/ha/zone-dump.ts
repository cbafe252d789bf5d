/** knotd's zone dump (`knotc zone-flush +outdir`) as promotion reads it. */

/** Records a signing knotd adds (and signs again after a promotion); dnsctl's zones never hold them. */
const DNSSEC_TYPES = new Set(['RRSIG', 'NSEC', 'NSEC3', 'NSEC3PARAM', 'DNSKEY', 'CDS', 'CDNSKEY', 'ZONEMD'])

/** Knot's dump (`name ttl TYPE rdata` per line) without the DNSSEC records. */
export function withoutDnssec(dump: string): string {
  return dump
    .split('\n')
    .filter((line) => !DNSSEC_TYPES.has(line.trim().split(/\s+/)[2]?.toUpperCase() ?? ''))
    .join('\n')
}
