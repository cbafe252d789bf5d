/**
 * Config fields of the HA roles (spread into config.ts's schema, which alone reads the
 * environment). See README "HA roles and status".
 */
import { type ConfigOf, field } from '@gatehouse/kit/config.ts'
import type { ListenAddress } from '@gatehouse/kit/net.ts'
import { address } from '../config-address.ts'

export const haSchema = {
  role: field.enum(['standalone', 'primary', 'secondary'] as const, {
    env: 'DNSCTL_HA_ROLE',
    flag: 'ha-role',
    default: 'standalone',
    doc: 'HA role at first start: standalone (no peer), primary (writable, replicates to the peer) or secondary (read-only, replicates from the peer); a promotion is stored and wins afterwards',
  }),
  peerApi: field.custom(address, {
    env: 'DNSCTL_HA_PEER_API',
    flag: 'ha-peer-api',
    doc: "host:port of the peer dnsctl's read-only metrics listener (its --metrics-listen): peer status and, on a secondary, the zone list",
  }),
  peerKnot: field.custom(address, {
    env: 'DNSCTL_HA_PEER_KNOT',
    flag: 'ha-peer-knot',
    doc: "host:port where the peer's knotd answers DNS: the primary NOTIFYs it and lets it transfer, the secondary transfers from it",
  }),
  vip: field.custom(
    (raw: unknown) => {
      const s = String(raw)
      // node:net only when a VIP is given: importing it costs every command, `--help` too, 6 ms (#22).
      if (process.getBuiltinModule('node:net').isIP(s) === 0)
        throw new Error(`${JSON.stringify(s)} is not an IP address`)
      return s
    },
    {
      env: 'DNSCTL_HA_VIP',
      flag: 'ha-vip',
      doc: 'the virtual service address (usually keepalived owns it); the status says whether a local interface holds it',
    },
  ),
  vipNetns: field.string({
    env: 'DNSCTL_HA_VIP_NETNS',
    flag: 'ha-vip-netns',
    pattern: /^[A-Za-z0-9_.-]{1,64}$/,
    patternDoc: 'a network namespace name',
    doc: 'look for the VIP in this named network namespace (`ip -n NAME`) instead of our own, when keepalived runs in another one',
  }),
  peerTimeout: field.duration({
    env: 'DNSCTL_HA_PEER_TIMEOUT',
    flag: 'ha-peer-timeout',
    default: '1s',
    min: '10ms',
    doc: 'deadline of each peer check (status fetch, SOA query of the peer knotd)',
  }),
  syncInterval: field.duration({
    env: 'DNSCTL_HA_SYNC_INTERVAL',
    flag: 'ha-sync-interval',
    default: '15s',
    min: '10ms',
    doc: "how often the secondary follows the primary's zone list and both sides refresh the peer's state",
  }),
}

export const metricsListenField = field.custom(address, {
  env: 'DNSCTL_METRICS_LISTEN',
  flag: 'metrics-listen',
  doc: 'host:port of the read-only listener (/metrics, /healthz, /readyz, GET /v1/status/ha) that the HA peer and monitoring may reach; unset: none',
})

/**
 * Cross-field rules of the HA settings, as lines for the ConfigError. `invalid`: paths of settings
 * given with a bad value (reported already): a bad role checks nothing, a bad address counts as set.
 */
export function haProblems(
  raw: {
    ha: ConfigOf<typeof haSchema>
    metricsListen?: ListenAddress | undefined
  },
  invalid: ReadonlySet<string> = new Set(),
): string[] {
  const { role, peerApi, peerKnot } = raw.ha
  const problems: string[] = []
  if (invalid.has('ha.role')) return problems
  const missing = (path: string, value: unknown) => value === undefined && !invalid.has(path)
  if (role !== 'standalone' && missing('ha.peerKnot', peerKnot)) {
    problems.push(
      `ha: if ha.role is ${role}, ha.peerKnot (--ha-peer-knot) must be set (replication runs between the two knotd)`,
    )
  }
  if (role === 'secondary' && missing('ha.peerApi', peerApi)) {
    problems.push(
      "ha: if ha.role is secondary, ha.peerApi (--ha-peer-api) must be set (the primary's zone list comes from it)",
    )
  }
  if (role !== 'standalone' && missing('metricsListen', raw.metricsListen)) {
    problems.push(
      `ha: if ha.role is ${role}, metricsListen (--metrics-listen) must be set (the peer checks this node there)`,
    )
  }
  return problems
}
