/**
 * TLS sightings kept for the web candidate report: each sighting a `tlsgate` node uploads,
 * with the host (SNI) of the observation that carried it. The fingerprint aggregate keeps
 * only the newest metadata, so the host is recorded here, per sighting, at ingest.
 */
import type { DatabaseKind } from '@gatehouse/kit'
import type { Kysely } from 'kysely'
import type { DB, WebSightingTable } from '../db/schema.ts'
import type { Aggregate } from '../observations/merge.ts'
import { correlateSightings, lockCorrelation } from './evidence.ts'

/** Rows per insert statement (7 parameters each, well under both dialects' limits). */
const CHUNK = 500

/**
 * The "same host" rule's normal form: lowercase, no trailing dot, no port. Signal hosts and
 * SNI values are compared in this form.
 */
export function normalizeHost(host: string): string {
  let h = host.trim().toLowerCase()
  if (h.startsWith('[')) {
    const end = h.indexOf(']')
    h = end === -1 ? h : h.slice(1, end)
  } else if (/^[^:]+:\d+$/.test(h)) {
    h = h.slice(0, h.lastIndexOf(':'))
  }
  return h.replace(/\.$/, '')
}

/**
 * Store the sightings of a TLS gate's observation page and correlate them with the stored
 * signals, in one transaction (idempotent: a re-sent page adds nothing).
 */
export async function recordTlsSightings(
  db: Kysely<DB>,
  kind: DatabaseKind,
  instanceId: string,
  aggregates: Aggregate[],
): Promise<number> {
  const rows: WebSightingTable[] = []
  const seen = new Set<string>()
  for (const a of aggregates) {
    const host = normalizeHost(a.metadata.sni ?? '')
    for (const s of a.sightings) {
      const key = `${a.fingerprint}\u0000${s.ip}\u0000${s.port}\u0000${s.last_seen_ms}`
      if (seen.has(key)) continue
      seen.add(key)
      rows.push({
        instance_id: instanceId,
        fingerprint: a.fingerprint,
        ip: s.ip,
        port: s.port,
        host,
        seen_ms: s.last_seen_ms,
      })
    }
  }
  if (rows.length === 0) return 0
  let from = Number.POSITIVE_INFINITY
  let to = Number.NEGATIVE_INFINITY
  const ips = new Set<string>()
  for (const r of rows) {
    ips.add(r.ip)
    if (r.seen_ms < from) from = r.seen_ms
    if (r.seen_ms > to) to = r.seen_ms
  }
  return db.transaction().execute(async (trx) => {
    let inserted = 0
    for (let i = 0; i < rows.length; i += CHUNK) {
      const r = await trx
        .insertInto('web_sightings')
        .values(rows.slice(i, i + CHUNK))
        .onConflict((oc) => oc.doNothing())
        .executeTakeFirst()
      inserted += Number(r.numInsertedOrUpdatedRows ?? 0)
    }
    if (inserted > 0) {
      await lockCorrelation(trx, kind)
      await correlateSightings(trx, instanceId, [...ips], from, to)
    }
    return inserted
  })
}

/** Remove TLS sightings seen before the cutoff (the `--sighting-retention` sweep). */
export async function sweepTlsSightings(db: Kysely<DB>, cutoffMs: number): Promise<number> {
  const r = await db.deleteFrom('web_sightings').where('seen_ms', '<', cutoffMs).executeTakeFirst()
  return Number(r.numDeletedRows)
}
