/** Builds the dnsctl HTTP app from its parts; never listens (main.ts and the tests do). */
import { createHttpApp, Gauge, type HttpApp, type Logger, packageVersion } from '@gatehouse/kit'
import type { Kysely } from 'kysely'
import { blocklistRoutes } from './blocklists/routes.ts'
import { BlocklistService } from './blocklists/service.ts'
import type { Config } from './config.ts'
import type { DB } from './db/schema.ts'
import { errors } from './errors.ts'
import { healthRoutes } from './health/routes.ts'
import { HealthService } from './health/service.ts'
import { Knotc } from './knot/knotc.ts'
import { Failpoints } from './publish/failpoints.ts'
import { Journal } from './publish/journal.ts'
import { KnotAuthority } from './publish/knot-authority.ts'
import { Notifier } from './publish/notifier.ts'
import { zoneRoutes } from './zones/routes.ts'
import { ZoneService } from './zones/service.ts'

export interface ServerDeps {
  db: Kysely<DB>
  logger: Logger
  /** Clock for health ages and record times (tests pass a fixed one). */
  now?: () => Date
}

export interface Dnsctl {
  app: HttpApp
  zones: ZoneService
  /** Recover interrupted publications and load the zones; call before listening. */
  start(): Promise<void>
  /** Wait for running publications, then close the HTTP app. */
  close(): Promise<void>
}

export async function buildServer(config: Config, deps: ServerDeps): Promise<Dnsctl> {
  const now = deps.now ?? (() => new Date())
  const app = await createHttpApp({
    name: 'dnsctl',
    version: packageVersion(import.meta.dirname),
    logger: deps.logger,
    bodyLimit: config.bodyLimit,
    openapi: {
      title: 'dnsctl',
      description: 'DNS management API (zones, RRsets, blocklist configuration, refresh health)',
      errors,
    },
  })
  const knotc = new Knotc({
    knotc: config.knot.knotc,
    socket: config.knot.socket,
    zonesDir: config.knot.zonesDir,
    timeoutMs: config.knot.commandTimeout,
  })
  const authority = new KnotAuthority(knotc, config.knot.address, config.knot.verifyTimeout)
  const publications = app.metrics.counter('publications_total', 'Zone publications by action and outcome', [
    'action',
    'outcome',
  ])
  const publicationSeconds = app.metrics.histogram(
    'publication_duration_seconds',
    'Time from request to verified (or rolled back) publication',
    ['action'],
    [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  )
  const zones = new ZoneService({
    metrics: {
      outcome(action, outcome, seconds) {
        publications.inc({ action, outcome })
        publicationSeconds.observe({ action }, seconds)
      },
    },
    historyKeep: config.historyKeep,
    db: deps.db,
    authority,
    journal: new Journal(config.journalDir),
    failpoints: new Failpoints(config.failpoints),
    log: deps.logger,
    now,
    notifier: new Notifier(config.notify.replicas, config.notify.timeout),
  })
  app.readiness.add('knot', () => knotc.ping())
  new Gauge({
    name: `${app.metrics.prefix}zones`,
    help: 'Managed zones by role',
    labelNames: ['role'],
    registers: [app.metrics.registry],
    collect() {
      this.reset()
      for (const role of ['primary', 'secondary'] as const) {
        this.set({ role }, zones.list().filter((z) => z.role === role).length)
      }
    },
  })
  zoneRoutes(app, zones)
  blocklistRoutes(app, new BlocklistService(config.blocklistDir))
  healthRoutes(app, new HealthService(config.resultsDir, now))
  let timer: NodeJS.Timeout | undefined
  return {
    app,
    zones,
    async start() {
      await zones.start()
      timer = setInterval(() => {
        zones.reconcile().catch((err) => deps.logger.error({ err }, 'reconciling zones with knotd failed'))
      }, config.knot.reconcileInterval)
      timer.unref()
    },
    async close() {
      clearInterval(timer)
      await app.close()
      await zones.stop()
    },
  }
}
