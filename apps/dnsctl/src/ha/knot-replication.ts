/**
 * The Knot DNS side of HA: dnsctl configures replication in knotd's running configuration
 * (knotc conf transactions), so the operator's knot.conf needs nothing HA-specific.
 *
 * - primary: `remote[gatehouse-peer]` is the secondary's knotd; the default template NOTIFYs it
 *   (RFC 1996) and an ACL lets it transfer (AXFR, or IXFR where the journal has the changes).
 * - secondary: `remote[gatehouse-peer]` is the primary's knotd; every replicated zone names it
 *   as `master` and the default template accepts its NOTIFY.
 *
 * Runtime configuration lives only in knotd's memory (journal-less conf), so dnsctl applies it
 * again at every start and sync; every step checks what knotd already has first.
 */
import type { ListenAddress } from '@gatehouse/kit/net.ts'
import type { Knotc } from '../knot/knotc.ts'

export const PEER_REMOTE = 'gatehouse-peer'
export const PEER_TRANSFER_ACL = 'gatehouse-peer-transfer'
export const PEER_NOTIFY_ACL = 'gatehouse-peer-notify'
const TEMPLATE = 'template[default]'

function knotAddress(a: ListenAddress): string {
  return `${a.host}@${a.port}`
}

/** `section[id].item = value` lines of conf-read, as [id, item, value] (lowercase ids, no trailing dot). */
function parseConf(lines: string[]): [string, string, string][] {
  const out: [string, string, string][] = []
  for (const line of lines) {
    const m = /^\w+\[([^\]]+)\]\.([\w-]+) = (.*)$/.exec(line.trim())
    if (m) out.push([m[1]!.toLowerCase().replace(/\.$/, ''), m[2]!, m[3]!.trim()])
  }
  return out
}

export class KnotReplication {
  readonly knotc: Knotc
  readonly peer: ListenAddress

  constructor(knotc: Knotc, peer: ListenAddress) {
    this.knotc = knotc
    this.peer = peer
  }

  /** Steps that make the remote and one ACL exist with exactly our values. */
  async #peerSteps(acl: string, action: 'transfer' | 'notify'): Promise<string[][]> {
    const steps: string[][] = []
    const remote = parseConf(await this.knotc.confRead(`remote[${PEER_REMOTE}]`))
    const want = knotAddress(this.peer)
    const addresses = remote.filter(([, item]) => item === 'address').map(([, , v]) => v)
    if (remote.length === 0) steps.push(['conf-set', `remote[${PEER_REMOTE}]`])
    if (addresses.length !== 1 || addresses[0] !== want) {
      if (addresses.length > 0) steps.push(['conf-unset', `remote[${PEER_REMOTE}].address`])
      steps.push(['conf-set', `remote[${PEER_REMOTE}].address`, want])
    }
    const current = parseConf(await this.knotc.confRead(`acl[${acl}]`))
    if (current.length === 0) {
      steps.push(['conf-set', `acl[${acl}]`])
      steps.push(['conf-set', `acl[${acl}].address`, this.peer.host])
      steps.push(['conf-set', `acl[${acl}].action`, action])
    } else if (!current.some(([, item, v]) => item === 'address' && v === this.peer.host)) {
      steps.push(['conf-unset', `acl[${acl}].address`])
      steps.push(['conf-set', `acl[${acl}].address`, this.peer.host])
    }
    return steps
  }

  async #templateSteps(want: { acl: string; notify: boolean }): Promise<string[][]> {
    const template = parseConf(await this.knotc.confRead(TEMPLATE))
    const has = (item: string, value: string) => template.some(([, i, v]) => i === item && v === value)
    const steps: string[][] = []
    for (const acl of [PEER_TRANSFER_ACL, PEER_NOTIFY_ACL]) {
      if (acl !== want.acl && has('acl', acl)) steps.push(['conf-unset', `${TEMPLATE}.acl`, acl])
    }
    if (!has('acl', want.acl)) steps.push(['conf-set', `${TEMPLATE}.acl`, want.acl])
    if (want.notify && !has('notify', PEER_REMOTE)) steps.push(['conf-set', `${TEMPLATE}.notify`, PEER_REMOTE])
    if (!want.notify && has('notify', PEER_REMOTE)) steps.push(['conf-unset', `${TEMPLATE}.notify`, PEER_REMOTE])
    return steps
  }

  /** Primary: NOTIFY the peer and let it transfer every zone of the default template. */
  async configurePrimary(extra: string[][] = []): Promise<void> {
    const steps = [
      ...(await this.#peerSteps(PEER_TRANSFER_ACL, 'transfer')),
      ...extra,
      ...(await this.#templateSteps({ acl: PEER_TRANSFER_ACL, notify: true })),
    ]
    if (steps.length > 0) await this.knotc.transaction(steps)
  }

  /** Secondary: accept the primary's NOTIFY (zones name it as master one by one). */
  async configureSecondary(): Promise<void> {
    const steps = [
      ...(await this.#peerSteps(PEER_NOTIFY_ACL, 'notify')),
      ...(await this.#templateSteps({ acl: PEER_NOTIFY_ACL, notify: false })),
    ]
    if (steps.length > 0) await this.knotc.transaction(steps)
  }

  /** Zones knotd transfers from the peer (absolute names with the trailing dot). */
  async replicatedZones(): Promise<string[]> {
    return parseConf(await this.knotc.confRead('zone'))
      .filter(([, item, v]) => item === 'master' && v === PEER_REMOTE)
      .map(([zone]) => `${zone}.`)
  }

  /** Secondary: follow the primary's zone list (absolute names); returns what changed. */
  async follow(zones: string[]): Promise<{ added: string[]; removed: string[] }> {
    const have = new Set(await this.replicatedZones())
    const all = new Set(await this.knotc.zones())
    const want = new Set(zones)
    const added = [...want].filter((z) => !have.has(z))
    const removed = [...have].filter((z) => !want.has(z))
    const steps: string[][] = []
    for (const z of added) {
      if (!all.has(z)) steps.push(['conf-set', `zone[${z}]`])
      steps.push(['conf-set', `zone[${z}].master`, PEER_REMOTE])
    }
    for (const z of removed) steps.push(['conf-unset', `zone[${z}]`])
    if (steps.length > 0) await this.knotc.transaction(steps)
    // A zone knotd already served (a demoted primary's) keeps its SOA timers: ask for the
    // primary's serial now instead of at the next refresh (a NOTIFY may have come too early).
    for (const z of added.filter((z) => all.has(z))) await this.knotc.run('zone-refresh', z)
    return { added, removed }
  }

  /** Promotion: the zones stop transferring and knotd serves them from their files as primary. */
  async becomePrimary(zones: string[]): Promise<void> {
    await this.configurePrimary(zones.map((z) => ['conf-unset', `zone[${z}].master`]))
  }
}
