/** Builds the dnsctl HTTP app from its parts; never listens (main.ts and the tests do). */
import { readFileSync } from 'node:fs'
import { rootCertificates } from 'node:tls'
import {
  createHttpApp,
  createTlsAgent,
  Gauge,
  type HttpApp,
  type Logger,
  packageVersion,
  StartupError,
} from '@gatehouse/kit'
import { type PeriodicJob, periodic } from '@gatehouse/kit/periodic.ts'
import { RepeatedFailure } from '@gatehouse/kit/repeated-failure.ts'
import type { Kysely } from 'kysely'
import { DnstapListener } from './analytics/listener.ts'
import { analyticsRoutes } from './analytics/routes.ts'
import { AnalyticsService } from './analytics/service.ts'
import { removeAuditBefore } from './audit/store.ts'
import { type Schedule, scheduleRefresh } from './blocklists/job.ts'
import { blocklistRoutes } from './blocklists/routes.ts'
import { BlocklistService } from './blocklists/service.ts'
import type { Config } from './config.ts'
import { consoleNotFoundPage } from './console/not-found-page.ts'
import { type Console, consoleHostNames, consoleRoutes } from './console/routes.ts'
import type { DB } from './db/schema.ts'
import { errors } from './errors.ts'
import { haMetrics } from './ha/metrics.ts'
import { haMetricsRoutes, haRoutes, readOnlyGuard } from './ha/routes.ts'
import { HaService } from './ha/service.ts'
import { removeHaEventsBefore } from './ha/store.ts'
import { healthRoutes } from './health/routes.ts'
import { HealthService } from './health/service.ts'
import { PrometheusUpstream } from './history/prometheus.ts'
import { historyRoutes } from './history/routes.ts'
import { HistoryService } from './history/service.ts'
import { Knotc } from './knot/knotc.ts'
import { ProviderClient } from './provider/client.ts'
import { providerRoutes } from './provider/routes.ts'
import { ProviderService } from './provider/service.ts'
import { readToken } from './provider/token.ts'
import { Failpoints } from './publish/failpoints.ts'
import { Journal } from './publish/journal.ts'
import { KnotAuthority } from './publish/knot-authority.ts'
import { Notifier } from './publish/notifier.ts'
import { scheduleTransfers } from './transfer/job.ts'
import { zoneRoutes } from './zones/routes.ts'
import { ZoneService } from './zones/service.ts'

export interface ServerDeps {
  db: Kysely<DB>
  logger: Logger
  /** Clock for health ages and record times (tests pass a fixed one). */
  now?: () => Date
  /** Between audit retention runs (default an hour; the first a minute after start). */
  auditSweepIntervalMs?: number
}

export interface Dnsctl {
  app: HttpApp
  /** The read-only listener (metrics, health, HA status), when --metrics-listen is set; main.ts listens. */
  metricsApp: HttpApp | undefined
  zones: ZoneService
  ha: HaService
  /** The web console: its own listener (listened by serve.ts when --console-listen is set) and sign-in. */
  console: Console
  /** Recover interrupted publications and load the zones; call before listening. */
  start(): Promise<void>
  /** Wait for running publications, then close the HTTP app. */
  close(): Promise<void>
}

export async function buildServer(config: Config, deps: ServerDeps): Promise<Dnsctl> {
  const now = deps.now ?? (() => new Date())
  let webConsole: ReturnType<typeof consoleRoutes> | undefined
  const app = await createHttpApp({
    name: 'dnsctl',
    version: packageVersion(import.meta.dirname),
    logger: deps.logger,
    bodyLimit: config.bodyLimit,
    // No authentication: only a request naming this listener may reach it (DNS rebinding).
    hostGuard: {
      names: [
        ...config.allowedHosts,
        ...(isUnspecified(config.listen.host) ? [] : [config.listen.host]),
        ...consoleHostNames(config).filter((h) => !isUnspecified(h)),
      ],
    },
    // A browser's navigation to an address the console does not have: the console's own page
    // (the API listener has no pages: its misses stay the coded JSON even for a browser).
    notFoundPage: (path, req) => (webConsole?.listener.owns(req.raw) ? consoleNotFoundPage(path) : undefined),
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
  const ha = new HaService({ config, db: deps.db, knotc, zones, log: deps.logger, now })
  readOnlyGuard(app, ha)
  haRoutes(app, ha)
  haMetrics(app, ha)
  let metricsApp: HttpApp | undefined
  if (config.metricsListen) {
    metricsApp = await createHttpApp({
      name: 'dnsctl',
      version: packageVersion(import.meta.dirname),
      logger: deps.logger,
      routes: { health: true, metrics: false, openapi: false },
      accessLog: false,
    })
    metricsApp.readiness.add('knot', () => knotc.ping())
    // The API's registry: both listeners show the same counters.
    const registry = app.metrics.registry
    metricsApp.get('/metrics', { schema: { hide: true } }, async (_req, reply) => {
      reply.header('content-type', registry.contentType)
      return registry.metrics()
    })
    haMetricsRoutes(metricsApp, ha)
  }
  webConsole = consoleRoutes(app, config)
  zoneRoutes(app, zones)
  const providerCa = readCaFile(config.provider.caFile)
  const providerClient = new ProviderClient({
    apiUrl: config.provider.apiUrl,
    token: () => readToken(config.provider.tokenFile),
    dispatcher: createTlsAgent({
      ...(providerCa ? { ca: Buffer.from([...rootCertificates, providerCa].join('\n')) } : {}),
      requestTimeoutMs: config.provider.timeout,
    }),
    timeoutMs: config.provider.timeout,
  })
  const providerChanges = app.metrics.counter('provider_changes_total', 'Provider change outcomes', ['outcome'])
  providerRoutes(
    app,
    new ProviderService({
      config,
      db: deps.db,
      client: providerClient,
      log: deps.logger,
      now,
      onOutcome: (outcome) => providerChanges.inc({ outcome }),
    }),
  )
  blocklistRoutes(app, new BlocklistService(config.blocklistDir))
  healthRoutes(app, new HealthService(config.resultsDir, now))
  const prometheus = config.metricsPrometheus.url
    ? new PrometheusUpstream({
        url: config.metricsPrometheus.url,
        selector: config.metricsPrometheus.selector,
        prefix: config.metricsPrometheus.prefix,
        timeoutMs: config.metricsPrometheus.timeout,
      })
    : undefined
  const history = new HistoryService(
    deps.db,
    config.resolver.controlDirs,
    now,
    prometheus,
    config.resolver.sampleInterval,
  )
  historyRoutes(app, history)
  let sampler: PeriodicJob | undefined
  const analytics = new AnalyticsService(config.analytics.privacy, now)
  analyticsRoutes(app, analytics)
  const dnstap = config.analytics.dnstapSocket
    ? new DnstapListener(config.analytics.dnstapSocket, analytics, deps.logger)
    : undefined
  let reconciler: PeriodicJob | undefined
  let auditSweep: PeriodicJob | undefined
  let blocklistSchedule: Schedule | undefined
  let transferSchedule: Schedule | undefined
  return {
    app,
    metricsApp,
    zones,
    ha,
    console: webConsole,
    async start() {
      await zones.start()
      await ha.start()
      // A pass waits for knotd per zone: one outlasting the interval is joined, not doubled.
      reconciler = periodic(() => zones.reconcile(), {
        intervalMs: config.knot.reconcileInterval,
        metrics: { app: app.metrics, job: 'reconcile' },
        onError: (err) => deps.logger.error({ err }, 'reconciling zones with knotd failed'),
      })
      if (config.auditRetention > 0) {
        auditSweep = periodic(
          async () => {
            const before = now().getTime() - config.auditRetention
            const removed = await removeAuditBefore(deps.db, before)
            if (removed > 0) deps.logger.info({ removed }, 'audit events older than --audit-retention removed')
            const haRemoved = await removeHaEventsBefore(deps.db, before)
            if (haRemoved > 0)
              deps.logger.info({ removed: haRemoved }, 'HA events older than --audit-retention removed')
          },
          {
            intervalMs: deps.auditSweepIntervalMs ?? 3_600_000,
            firstRunMs: deps.auditSweepIntervalMs ?? 60_000,
            metrics: { app: app.metrics, job: 'audit_retention' },
            onError: (err) => deps.logger.warn({ err }, 'removing old audit events failed; it runs again in an hour'),
          },
        )
      }
      blocklistSchedule = scheduleRefresh(config, deps.logger)
      transferSchedule = scheduleTransfers(config, deps.logger)
      await dnstap?.start()
      // With a Prometheus upstream the history comes from it alone: nothing to sample.
      if (config.resolver.controlDirs.length > 0 && !prometheus) {
        // Every 15 s by default: while the resolver or the disk stays unusable, a line a minute.
        const failures = new RepeatedFailure(deps.logger, {
          failed: 'sampling the resolver counters failed',
          recovered: 'sampling the resolver counters works again',
          level: 'warn',
        })
        sampler = periodic(() => history.sample(), {
          intervalMs: config.resolver.sampleInterval,
          metrics: { app: app.metrics, job: 'resolver_sampler' },
          onError: (err) => failures.failed(err),
          onSuccess: () => failures.succeeded(),
        })
      }
    },
    async close() {
      await reconciler?.stop()
      await auditSweep?.stop()
      await sampler?.stop()
      await ha.stop()
      await metricsApp?.close()
      await dnstap?.close()
      await blocklistSchedule?.stop()
      await transferSchedule?.stop()
      await webConsole.listener.close()
      await app.close()
      await zones.stop()
    },
  }
}

function readCaFile(file: string | undefined): string | undefined {
  if (file === undefined) return undefined
  try {
    return readFileSync(file, 'utf8')
  } catch (err) {
    throw new StartupError(`cannot read --provider-ca-file ${file}: ${(err as NodeJS.ErrnoException).code ?? err}`)
  }
}

// 0.0.0.0 and :: are not names a client should use (browsers map 0.0.0.0 to this host).
function isUnspecified(host: string): boolean {
  return host === '0.0.0.0' || host === '::' || host === '[::]'
}
