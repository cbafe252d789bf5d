/** Store-level fixtures for the web enforcement tests: signals and TLS sightings written directly. */
import type { EdgeDatabase } from '../src/db/open.ts'
import type { EnforcementSettings } from '../src/enforcement/service.ts'
import { mergeBatch } from '../src/observations/group-merge.ts'
import type { Aggregate } from '../src/observations/merge.ts'
import { recordSignals } from '../src/signals/store.ts'
import { recordTlsSightings } from '../src/web/sightings.ts'

type Db = Pick<EdgeDatabase, 'db' | 'kind'>

export const MIN = 60_000
let seq = 0

/**
 * A TLS sighting of `fp` on `gate` for host shop.example (or `sni`; '' for a client that sent
 * none): recorded on its own (`record`), or as ingest records it, in the merge of an uploaded
 * observation (`merge`, which needs the whole database handle).
 */
export async function sighting(
  d: Db,
  gate: string,
  fp: string,
  ip: string,
  atMs: number,
  sni = 'shop.example',
  via: 'record' | 'merge' = 'record',
) {
  const observation: Aggregate = {
    fingerprint: fp,
    reported_status: 'unknown',
    first_seen_ms: atMs,
    last_seen_ms: atMs,
    count: 1,
    ips: [ip],
    ports: [443],
    sightings: [{ ip, port: 443, last_seen_ms: atMs }],
    metadata: sni === '' ? {} : { sni },
  }
  if (via === 'record') await recordTlsSightings(d.db, d.kind, gate, [observation])
  else await mergeBatch(d as EdgeDatabase, gate, [observation], 0, Date.now(), true)
}

/** A scanner-like signal from `ip` for shop.example or `host` (8 errors, 2 successes). */
export async function signal(d: Db, node: string, ip: string, atMs: number, site = 'shop', host = 'shop.example') {
  await recordSignals(d.db, d.kind, node, [
    {
      instance_id: node,
      event_id: `e${++seq}`,
      observed_ms: atMs,
      host,
      site,
      ip,
      trigger: 'suspicious_uri',
      connections: 10,
      errors: 8,
      successes: 2,
      window_seconds: 60,
      received_ms: atMs,
    },
  ])
}

/** Enough evidence for would_block under `settings()`: two networks, two sites, three signals. */
export async function scanner(db: Db, gate: string, fp: string, atMs: number, net = 1) {
  const a = `198.51.${net}.7`
  const b = `203.0.${net}.9`
  await sighting(db, gate, fp, a, atMs)
  await sighting(db, gate, fp, b, atMs)
  await signal(db, 'web-1', a, atMs, 'shop')
  await signal(db, 'web-1', b, atMs, 'blog')
  await signal(db, 'web-1', a, atMs + 1)
}

export function settings(mode: EnforcementSettings['mode'], canaryNodes: string[] = []): EnforcementSettings {
  return {
    mode,
    canaryNodes,
    windowMs: 15 * MIN,
    policy: {
      enabled: true,
      minNetworks: 2,
      minSignals: 3,
      minErrorRatio: 0.5,
      requireMultiScope: true,
      proposedTtlMs: 60 * MIN,
    },
  }
}
