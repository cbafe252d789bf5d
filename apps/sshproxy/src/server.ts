/**
 * Builds the gate from its parts: one TCP listener per route, the observation recorder,
 * periodic pruning and the optional metrics listener. `buildServer` never listens; `start`
 * (called by `serve`) probes the backends and listens, `stop` drains.
 */
import { createServer, type Server, type Socket } from 'node:net'
import { type AppMetrics, createHttpApp, createMetrics, type HttpApp, type Logger } from '@gatehouse/kit'
import { BypassRanges, loadManagedRanges } from './bypass/ranges.ts'
import type { ServeConfig } from './config.ts'
import type { Store } from './db/index.ts'
import { ObservationRecorder } from './fingerprints/recorder.ts'
import { pruneToCap, removeExpiredSightings } from './fingerprints/store.ts'
import { BackendError, BackendIdentity, formatAddress } from './gate/backend.ts'
import { handleClient, type RouteContext } from './gate/connection.ts'
import { createGateMetrics, routeMetrics } from './gate/gate-metrics.ts'
import { ConnectionCap, SourceRateLimiter } from './gate/limits.ts'
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
  })
  const bypass = new BypassRanges(config.trustedRanges, await loadManagedRanges(store.db))
  const limiter = new SourceRateLimiter(config.ipRate, config.ipBurst)
  const cap = new ConnectionCap(config.maxConnections)
  const open = new Set<Socket>()
  const contexts: RouteContext[] = config.routes.map((route) => ({
    route,
    identity: new BackendIdentity(route.backend, config.backendTimeoutMs),
    db: store.db,
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
  }))
  const servers: Server[] = contexts.map((ctx) => {
    const server = createServer({ noDelay: true }, (socket) => handleClient(ctx, socket))
    server.on('error', (err) => logger.error({ route: ctx.route.name, reason: err.message }, 'listener error'))
    return server
  })
  let metricsApp: HttpApp | undefined
  if (config.metricsListen) {
    metricsApp = await createHttpApp({
      name: 'sshproxy',
      version: VERSION,
      logger,
      metrics,
      routes: { health: true, metrics: true, openapi: false },
      accessLog: false,
    })
    metricsApp.readiness.add('database', () => store.ping())
  }

  const maintain = async () => {
    try {
      const pruned = await pruneToCap(store.db, config.maxFingerprints)
      const before = new Date(Date.now() - config.sightingRetentionMs).toISOString()
      const expired = await removeExpiredSightings(store.db, before)
      limiter.sweep()
      if (pruned > 0 || expired > 0) logger.info({ pruned, expired_sighting_rows: expired }, 'store maintenance')
    } catch (err) {
      logger.error({ reason: (err as Error).message }, 'store maintenance failed')
    }
  }
  let maintenance: NodeJS.Timeout | undefined

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
      for (const [i, server] of servers.entries()) {
        const { host, port } = contexts[i]!.route.listen
        await new Promise<void>((resolve, reject) => {
          server.once('error', reject)
          server.listen({ host, port }, () => {
            server.off('error', reject)
            resolve()
          })
        })
        logger.info({ route: contexts[i]!.route.name, backend: formatAddress(contexts[i]!.route.backend) }, 'listening')
      }
      if (metricsApp && config.metricsListen) {
        await metricsApp.listen({ host: config.metricsListen.host, port: config.metricsListen.port })
      }
      await maintain()
      maintenance = setInterval(() => void maintain(), deps.maintenanceIntervalMs ?? 60_000)
    },
    addresses() {
      return servers.map((s, i) => {
        const a = s.address()
        const port = a && typeof a === 'object' ? a.port : 0
        return { route: contexts[i]!.route.name, host: contexts[i]!.route.listen.host, port }
      })
    },
    metricsAddress() {
      const a = metricsApp?.server.address()
      return a && typeof a === 'object' ? { host: a.address, port: a.port } : undefined
    },
    async stop(drainMs) {
      clearInterval(maintenance)
      // close() stops accepting at once; its callback would wait for every session, so it is not awaited.
      for (const server of servers) if (server.listening) server.close()
      const deadline = Date.now() + drainMs
      if (open.size > 0) logger.info({ open: open.size, drain_ms: drainMs }, 'draining open sessions')
      while (open.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
      for (const socket of open) socket.destroy()
      await recorder.close()
      await metricsApp?.close()
    },
  }
}
