/**
 * Builds the gate from its parts: the route contexts (shared limits, bypass, recorder) and
 * their handlers on the kit's gate runtime (one TCP listener per route, the optional metrics
 * listener, store maintenance, the drain). `buildServer` never listens; `start` (called by
 * `serve`) listens, `stop` drains.
 */
import type { Socket } from 'node:net'
import { BypassRanges, loadManagedRanges } from '@gatehouse/kit/gate-bypass.ts'
import { ConnectionCap, connectionCapWithinLimit, SourceRateLimiter } from '@gatehouse/kit/gate-limits.ts'
import { gateRuntime } from '@gatehouse/kit/gate-server.ts'
import type { Logger } from '@gatehouse/kit/logger.ts'
import { type AppMetrics, createMetrics } from '@gatehouse/kit/metrics.ts'
import { spliceRelaysFor } from '@gatehouse/kit/splice-relay.ts'
import type { ServeConfig } from './config.ts'
import type { Store } from './db/index.ts'
import { ObservationRecorder } from './fingerprints/recorder.ts'
import { gateStatusReader } from './fingerprints/store.ts'
import { handleTlsClient, type RouteContext } from './gate/connection.ts'
import { createRouteMetrics } from './gate/metrics.ts'
import { handleSmtpClient, SmtpReporter } from './smtp/index.ts'
import { VERSION } from './version.ts'

export interface GateDeps {
  store: Store
  logger: Logger
  metrics?: AppMetrics
  /** How often observations are written (default 500 ms). */
  flushIntervalMs?: number
  /** How often pruning and sighting cleanup run (default 60 s). */
  maintenanceIntervalMs?: number
}

export interface Gate {
  metrics: AppMetrics
  /** Static and control-plane-managed trusted ranges (managed ones loaded from the store). */
  bypass: BypassRanges
  /** Hourly SMTP correlation reports of the smtp: routes (undefined without such routes). */
  smtpReports: SmtpReporter | undefined
  /** Listen on every route (and the metrics address). */
  start(): Promise<void>
  /** The bound address of each route, in configuration order (after `start`). */
  addresses(): { route: string; host: string; port: number }[]
  metricsAddress(): { host: string; port: number } | undefined
  /** Flush pending observations to the store now (tests, status). */
  flush(): Promise<void>
  /** Stop accepting, let open connections finish for up to `drainMs`, then close everything. */
  stop(drainMs: number): Promise<void>
}

export async function buildServer(config: ServeConfig, deps: GateDeps): Promise<Gate> {
  const { store, logger } = deps
  const metrics = deps.metrics ?? createMetrics('tlsgate', VERSION)
  const routeMetrics = createRouteMetrics(
    metrics,
    config.routes.map((r) => r.name),
  )
  const recorder = new ObservationRecorder({
    db: store.db,
    logger,
    maxEntries: config.maxFingerprints,
    intervalMs: deps.flushIntervalMs ?? 500,
    metrics,
  })
  const bypass = new BypassRanges(config.trustedRanges, await loadManagedRanges(store.db))
  const limiter = new SourceRateLimiter(config.ipRate, config.ipBurst)
  const cap = new ConnectionCap(
    connectionCapWithinLimit(config.maxConnections, {
      spliceHelpers: config.splice?.max ?? 0,
      warn: (fields, msg) => logger.warn(fields, msg),
    }),
  )
  const open = new Set<Socket>()
  const splice = spliceRelaysFor(config.splice, logger, metrics)
  const smtpRoutes = config.routes.filter((r) => r.mode === 'smtp')
  const smtpReports = smtpRoutes.length > 0 ? new SmtpReporter(config.smtpNamespace) : undefined
  const verdictOf = gateStatusReader(store)
  const contexts = new Map<string, RouteContext>()
  for (const route of config.routes)
    contexts.set(route.name, {
      route,
      verdictOf,
      recorder,
      metrics: routeMetrics.get(route.name)!,
      limiter,
      cap,
      logger,
      open,
      enforceUnknown: config.enforceUnknown,
      proxyProtocol: config.proxyProtocol,
      bypass,
      helloTimeoutMs: config.helloTimeoutMs,
      backendTimeoutMs: config.backendTimeoutMs,
      idleTimeoutMs: config.idleTimeoutMs,
      splice,
      ...(route.mode === 'smtp' && smtpReports ? { onOutcome: (o) => smtpReports.record(route, o) } : {}),
    })
  const runtime = await gateRuntime({
    app: 'tlsgate',
    version: VERSION,
    routes: config.routes,
    handle: (route, socket) => {
      const ctx = contexts.get(route.name)!
      ;(route.mode === 'smtp' ? handleSmtpClient : handleTlsClient)(ctx, socket)
    },
    store,
    logger,
    metrics,
    metricsListen: config.metricsListen,
    maxFingerprints: config.maxFingerprints,
    sightingRetentionMs: config.sightingRetentionMs,
    limiter,
    open,
    maintenanceIntervalMs: deps.maintenanceIntervalMs,
    pauseOnConnect: true,
  })
  return {
    metrics,
    bypass,
    smtpReports,
    start: () => runtime.start(),
    addresses: () => runtime.addresses(),
    metricsAddress: () => runtime.metricsAddress(),
    flush: () => recorder.flush(),
    async stop(drainMs) {
      await runtime.stop(drainMs)
      await recorder.close()
    },
  }
}
