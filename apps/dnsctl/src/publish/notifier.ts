/** NOTIFY to the configured replicas after zone create and delete; failures become warnings. */
import { type Address, sendNotify } from '../knot/dns.ts'

export class Notifier {
  readonly replicas: Address[]
  readonly timeoutMs: number
  constructor(replicas: Address[], timeoutMs: number) {
    this.replicas = replicas
    this.timeoutMs = timeoutMs
  }

  /** Returns one warning per replica that did not acknowledge. */
  async notify(zone: string): Promise<string[]> {
    const results = await Promise.allSettled(this.replicas.map((r) => sendNotify(r, zone, this.timeoutMs)))
    const warnings: string[] = []
    results.forEach((res, i) => {
      if (res.status === 'rejected') {
        const r = this.replicas[i]!
        warnings.push(
          `NOTIFY for ${zone} to ${r.host}:${r.port} failed (${(res.reason as Error).message}); the replica will pick up the change at its next SOA poll`,
        )
      }
    })
    return warnings
  }
}
