/**
 * Web candidates: the signal/sighting matches grouped by gate instance and TLS fingerprint,
 * with aggregate evidence, and (shadow policy) what automation would do with each. Pure
 * functions over the matches and decisions: reading them is the store's job, writing
 * anything is never this module's.
 */
import { parseIp } from '@gatehouse/kit/net.ts'
import type { DecisionRow } from '../db/schema.ts'
import type { GroupedEvidence } from './evidence.ts'
import type { MatchRow } from './store.ts'

/** `decisions.source` of blocks the web enforcement controller writes. */
export const AUTOMATED_SOURCE = 'web-controller'
/** `decisions.actor` of the controller's writes. */
export const CONTROLLER_ACTOR = 'controller:web'

/** Lists in the evidence keep at most this many values (the counts are exact). */
const LIST_CAP = 20

export interface ShadowPolicy {
  enabled: boolean
  minNetworks: number
  minSignals: number
  minErrorRatio: number
  requireMultiScope: boolean
  proposedTtlMs: number
}

export type ShadowStatus = 'would_block' | 'already_blocked' | 'protected' | 'insufficient_evidence'

export interface Evidence {
  signals: number
  connections: number
  errors: number
  successes: number
  /** errors / (errors + successes); 0 when both are 0. */
  error_ratio: number
  ip_count: number
  network_count: number
  networks: string[]
  site_count: number
  sites: string[]
  node_count: number
  nodes: string[]
  cross_site: boolean
  cross_node: boolean
  first_ms: number
  last_ms: number
}

export interface Candidate {
  instance_id: string
  fingerprint: string
  evidence: Evidence
  /** The live decision of the pair, if any. */
  decision: DecisionRow | undefined
  shadow?: { status: ShadowStatus; reasons: string[]; proposedExpiresMs: number | undefined }
}

const DOTTED_QUAD = /^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}$/

/** The client network of an address: its /24 (IPv4) or /64 (IPv6). */
export function networkOf(ip: string): string {
  // Stored addresses are normalised (IPv4 dotted quads): the common case needs no parser.
  if (DOTTED_QUAD.test(ip)) return `${ip.slice(0, ip.lastIndexOf('.'))}.0/24`
  try {
    const a = parseIp(ip)
    if (a.kind() === 'ipv4') {
      const o = a.toByteArray()
      return `${o[0]}.${o[1]}.${o[2]}.0/24`
    }
    const p = (a.toByteArray() as number[]).slice(0, 8)
    const groups = [0, 2, 4, 6].map((i) => ((p[i]! << 8) | p[i + 1]!).toString(16))
    return `${groups.join(':')}::/64`
  } catch {
    return ip
  }
}

interface Acc {
  instance_id: string
  fingerprint: string
  signals: number
  connections: number
  errors: number
  successes: number
  ips: Set<string>
  networks: Set<string>
  sites: Set<string>
  nodes: Set<string>
  first: number
  last: number
}

function sorted(set: Set<string>): string[] {
  return capped([...set])
}

/**
 * Groups matches by (gate, fingerprint) in JavaScript: the definition `groupedEvidence` (the
 * report's SQL) is tested against, over the join's matches. `result()` lists them most signals
 * first, then by key.
 */
export class MatchGrouper {
  // gate → fingerprint → group: two lookups with the row's own strings, no key built per row.
  readonly #groups = new Map<string, Map<string, Acc>>()
  readonly #all: Acc[] = []
  // A client address backs many candidates (NAT, several gates): derive its network once.
  readonly #networks = new Map<string, string>()

  add(matches: readonly MatchRow[]): void {
    const networks = this.#networks
    for (const m of matches) {
      let byFingerprint = this.#groups.get(m.gate)
      if (!byFingerprint) {
        byFingerprint = new Map()
        this.#groups.set(m.gate, byFingerprint)
      }
      let g = byFingerprint.get(m.fingerprint)
      if (!g) {
        g = {
          instance_id: m.gate,
          fingerprint: m.fingerprint,
          signals: 0,
          connections: 0,
          errors: 0,
          successes: 0,
          ips: new Set(),
          networks: new Set(),
          sites: new Set(),
          nodes: new Set(),
          first: m.observed_ms,
          last: m.observed_ms,
        }
        byFingerprint.set(m.fingerprint, g)
        this.#all.push(g)
      }
      g.signals++
      g.connections += m.connections
      g.errors += m.errors
      g.successes += m.successes
      if (!g.ips.has(m.ip)) {
        g.ips.add(m.ip)
        let network = networks.get(m.ip)
        if (network === undefined) {
          network = networkOf(m.ip)
          networks.set(m.ip, network)
        }
        g.networks.add(network)
      }
      g.sites.add(m.site)
      g.nodes.add(m.node)
      if (m.observed_ms < g.first) g.first = m.observed_ms
      if (m.observed_ms > g.last) g.last = m.observed_ms
    }
  }

  result(): Array<Omit<Candidate, 'decision'>> {
    return this.#all
      .map((g) => {
        const judged = g.errors + g.successes
        return {
          instance_id: g.instance_id,
          fingerprint: g.fingerprint,
          evidence: {
            signals: g.signals,
            connections: g.connections,
            errors: g.errors,
            successes: g.successes,
            error_ratio: judged === 0 ? 0 : Math.round((g.errors / judged) * 10_000) / 10_000,
            ip_count: g.ips.size,
            network_count: g.networks.size,
            networks: sorted(g.networks),
            site_count: g.sites.size,
            sites: sorted(g.sites),
            node_count: g.nodes.size,
            nodes: sorted(g.nodes),
            cross_site: g.sites.size >= 2,
            cross_node: g.nodes.size >= 2,
            first_ms: g.first,
            last_ms: g.last,
          },
        }
      })
      .sort(byEvidence)
  }
}

/** A candidate's evidence from the database's aggregates of its matches (`groupedEvidence`). */
export function evidenceOf(g: GroupedEvidence): Evidence {
  const judged = g.errors + g.successes
  return {
    signals: g.signals,
    connections: g.connections,
    errors: g.errors,
    successes: g.successes,
    error_ratio: judged === 0 ? 0 : Math.round((g.errors / judged) * 10_000) / 10_000,
    ip_count: g.ip_count,
    network_count: g.networks.length,
    networks: capped(g.networks),
    site_count: g.sites.length,
    sites: capped(g.sites),
    node_count: g.nodes.length,
    nodes: capped(g.nodes),
    cross_site: g.sites.length >= 2,
    cross_node: g.nodes.length >= 2,
    first_ms: g.first_ms,
    last_ms: g.last_ms,
  }
}

/** Candidates from `groupedEvidence` rows: most signals first, then by key (as `groupMatches`). */
export function candidatesOf(rows: readonly GroupedEvidence[]): Array<Omit<Candidate, 'decision'>> {
  return rows
    .map((g) => ({ instance_id: g.gate, fingerprint: g.fingerprint, evidence: evidenceOf(g) }))
    .sort(byEvidence)
}

function byEvidence(a: Omit<Candidate, 'decision'>, b: Omit<Candidate, 'decision'>): number {
  return (
    b.evidence.signals - a.evidence.signals ||
    (a.instance_id < b.instance_id ? -1 : a.instance_id > b.instance_id ? 1 : 0) ||
    (a.fingerprint < b.fingerprint ? -1 : a.fingerprint > b.fingerprint ? 1 : 0)
  )
}

/** A list's first LIST_CAP values in code-point order (the database's order is not JavaScript's). */
function capped(values: string[]): string[] {
  return values.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).slice(0, LIST_CAP)
}

/** Group matches by (gate, fingerprint); most signals first, then by key. */
export function groupMatches(matches: readonly MatchRow[]): Array<Omit<Candidate, 'decision'>> {
  const grouper = new MatchGrouper()
  grouper.add(matches)
  return grouper.result()
}

/** An automated block that is still in force at `nowMs`. */
export function isActiveAutomatedBlock(d: DecisionRow | undefined, nowMs: number): boolean {
  return (
    d !== undefined &&
    d.source === AUTOMATED_SOURCE &&
    d.status === 'blocked' &&
    Number(d.deleted) === 0 &&
    d.expires_ms !== null &&
    Number(d.expires_ms) > nowMs
  )
}

/**
 * The shadow verdict (spec "Shadow-policy rules"): a manual approval protects, a manual block
 * is already_blocked (so is an automated block in force), otherwise the thresholds decide.
 * Every unmet threshold is a reason; so is every met one for would_block.
 */
export function shadowVerdict(
  e: Evidence,
  decision: DecisionRow | undefined,
  p: ShadowPolicy,
  nowMs: number,
): NonNullable<Candidate['shadow']> {
  const manual = decision !== undefined && decision.source !== AUTOMATED_SOURCE
  if (manual && decision.status === 'approved') {
    return {
      status: 'protected',
      reasons: [`manual_approved: approved by ${decision.actor}`],
      proposedExpiresMs: undefined,
    }
  }
  if (manual && decision.status === 'blocked') {
    return {
      status: 'already_blocked',
      reasons: [`manual_blocked: blocked by ${decision.actor}`],
      proposedExpiresMs: undefined,
    }
  }
  if (isActiveAutomatedBlock(decision, nowMs)) {
    return {
      status: 'already_blocked',
      reasons: [`automated_block: until ${new Date(Number(decision!.expires_ms)).toISOString()}`],
      proposedExpiresMs: undefined,
    }
  }
  const unmet: string[] = []
  const met: string[] = []
  const check = (ok: boolean, text: string) => (ok ? met : unmet).push(text)
  check(e.signals >= p.minSignals, `min_signals: ${e.signals} of ${p.minSignals}`)
  check(e.network_count >= p.minNetworks, `min_networks: ${e.network_count} of ${p.minNetworks}`)
  check(e.error_ratio >= p.minErrorRatio, `min_error_ratio: ${e.error_ratio} of ${p.minErrorRatio}`)
  if (p.requireMultiScope) {
    check(e.cross_site || e.cross_node, `multi_scope: ${e.site_count} site(s), ${e.node_count} node(s)`)
  }
  if (unmet.length > 0) return { status: 'insufficient_evidence', reasons: unmet, proposedExpiresMs: undefined }
  return { status: 'would_block', reasons: met, proposedExpiresMs: nowMs + p.proposedTtlMs }
}
