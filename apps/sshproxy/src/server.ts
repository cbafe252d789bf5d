/**
 * Builds the gate from its parts: one TCP listener per route, the observation recorder,
 * periodic pruning and the optional metrics listener. `buildServer` never listens; `start`
 * (called by `serve`) probes the backends and listens, `stop` drains.
 */
import type { Socket } from 'node:net'
import { type AppMetrics, createMetrics, type Logger } from '@gatehouse/kit'
import { gateRuntime } from '@gatehouse/kit/gate-server.ts'
import { spliceRelaysFor } from '@gatehouse/kit/splice-relay.ts'
import { BypassRanges, loadManagedRanges } from './bypass/ranges.ts'
import type { ServeConfig } from './config.ts'
import type { Store } from './db/index.ts'
import { ObservationRecorder } from './fingerprints/recorder.ts'
import { gateStatusReader } from './fingerprints/store.ts'
import { BackendError, BackendIdentity, formatAddress } from './gate/backend.ts'
import { handleClient, type RouteContext } from './gate/connection.ts'
import { createGateMetrics, routeMetrics } from './gate/gate-metrics.ts'
import { ConnectionCap, connectionCapWithinLimit, SourceRateLimiter } from './gate/limits.ts'
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
  /** Probe every backend once, then listen on every route (and the metrics address). */
  start(): Promise<void>
  /** The bound address of each route, in configuration order (after `start`). */
  addresses(): { route: string; host: string; port: number }[]
  metricsAddress(): { host: string; port: number } | undefined
  /** Stop accepting, let open sessions finish for up to `drainMs`, then close everything. */
  stop(drainMs: number): Promise<void>
}

export async function buildServer(config: ServeConfig, deps: GateDeps): Promise<Gate> {
  const { store, logger } = deps
  const metrics = deps.metrics ?? createMetrics('sshproxy', VERSION)
  const gateMetrics = createGateMetrics(
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
  const verdictOf = gateStatusReader(store)
  const contexts: RouteContext[] = config.routes.map((route) => ({
    route,
    identity: new BackendIdentity(route.backend, config.backendTimeoutMs),
    verdictOf,
    recorder,
    metrics: routeMetrics(gateMetrics, route.name),
    limiter,
    cap,
    logger,
    open,
    allowUnknown: config.allowUnknown,
    bypass,
    handshakeTimeoutMs: config.handshakeTimeoutMs,
    backendTimeoutMs: config.backendTimeoutMs,
    idleTimeoutMs: config.idleTimeoutMs,
    splice,
  }))
  const byRoute = new Map(contexts.map((ctx) => [ctx.route.name, ctx]))
  const runtime = await gateRuntime({
    app: 'sshproxy',
    version: VERSION,
    routes: config.routes,
    handle: (route, socket) => handleClient(byRoute.get(route.name)!, socket),
    store,
    logger,
    metrics,
    metricsListen: config.metricsListen,
    maxFingerprints: config.maxFingerprints,
    sightingRetentionMs: config.sightingRetentionMs,
    limiter,
    open,
    maintenanceIntervalMs: deps.maintenanceIntervalMs,
  })

  return {
    metrics,
    bypass,
    async start() {
      await Promise.all(
        contexts.map(async (ctx) => {
          const backend = formatAddress(ctx.route.backend)
          try {
            const id = await ctx.identity.get()
            logger.info({ route: ctx.route.name, backend, identification: id }, 'backend probed')
          } catch (err) {
            // The gate still starts: the first client triggers another probe.
            const what = err instanceof BackendError ? err.failure : 'error'
            logger.error(
              { route: ctx.route.name, backend, reason: (err as Error).message },
              `BACKEND ${backend} ${what} (startup probe)`,
            )
          }
        }),
      )
      await runtime.start()
    },
    addresses: () => runtime.addresses(),
    metricsAddress: () => runtime.metricsAddress(),
    async stop(drainMs) {
      await runtime.stop(drainMs)
      await recorder.close()
    },
  }
}
