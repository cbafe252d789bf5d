/** HA gauges (dnsctl_ha_*), read from what the sync loop last saw: collecting never waits on the peer. */
import { Gauge, type HttpApp } from '@gatehouse/kit'
import type { HaService } from './service.ts'

export function haMetrics(app: HttpApp, ha: HaService): void {
  const registers = [app.metrics.registry]
  const prefix = app.metrics.prefix
  new Gauge({
    name: `${prefix}ha_read_only`,
    help: '1 while this node refuses writes (HA secondary, fenced former primary, promotion running)',
    registers,
    collect() {
      this.set(ha.readOnlyReason() === undefined ? 0 : 1)
    },
  })
  new Gauge({
    name: `${prefix}ha_role`,
    help: 'HA role: 1 for the role this node has now',
    labelNames: ['role'],
    registers,
    collect() {
      for (const role of ['standalone', 'primary', 'secondary'] as const) this.set({ role }, ha.role === role ? 1 : 0)
    },
  })
  new Gauge({
    name: `${prefix}ha_epoch`,
    help: 'HA epoch (grows with every promotion)',
    registers,
    collect() {
      this.set(ha.epoch)
    },
  })
  new Gauge({
    name: `${prefix}ha_peer_reachable`,
    help: "1 when the peer's metrics listener answered the last check, 0 when not (absent without a peer)",
    registers,
    collect() {
      this.reset()
      const peer = ha.lastPeer
      if (peer) this.set(peer.reachable ? 1 : 0)
    },
  })
}
