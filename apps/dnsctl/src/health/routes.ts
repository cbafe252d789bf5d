/** GET /v1/status/refresh and the refresh gauges of /metrics. */
import { Gauge, type HttpApp } from '@gatehouse/kit'
import type { HealthService, RefreshStatus } from './service.ts'

function seconds(time: string | null | undefined): number | undefined {
  return time ? Date.parse(time) / 1000 : undefined
}

export function healthRoutes(app: HttpApp, service: HealthService) {
  app.get(
    '/v1/status/refresh',
    {
      schema: {
        summary: 'Show refresh health (zone transfers, blocklists, RRSIG expiry, differential check)',
        tags: ['status'],
      },
    },
    async () => service.status(),
  )

  // Gauges computed at scrape time from the same result files.
  const registers = [app.metrics.registry]
  const prefix = app.metrics.prefix
  // prom-client collects gauges concurrently, so each reads the (small) result files itself.
  const gauge = (name: string, help: string, pick: (s: RefreshStatus) => number | undefined) =>
    new Gauge({
      name: prefix + name,
      help,
      registers,
      async collect() {
        const v = pick(await service.status())
        this.reset()
        if (v !== undefined) this.set(v)
      },
    })
  gauge('refresh_healthy', 'Refresh health: 1 healthy, 0 not (see /v1/status/refresh)', (s) => (s.healthy ? 1 : 0))
  gauge('zone_transfer_last_success_timestamp_seconds', 'Unix time of the last successful zone transfer', (s) =>
    seconds(s.zone_transfer?.last_success_at),
  )
  gauge('blocklist_refresh_last_success_timestamp_seconds', 'Unix time of the last successful blocklist refresh', (s) =>
    seconds(s.blocklist_refresh?.last_success_at),
  )
  gauge('blocklist_domains', 'Domains in the compiled blocklist', (s) => s.blocklist_refresh?.domain_count ?? undefined)
  gauge('rrsig_earliest_expiry_timestamp_seconds', 'Unix time at which the earliest transferred RRSIG expires', (s) =>
    seconds(s.zone_transfer?.earliest_rrsig_expiry),
  )
  gauge('differential_check_timestamp_seconds', 'Unix time of the latest primary-versus-secondary check', (s) =>
    seconds(s.differential_check?.checked_at),
  )
}
