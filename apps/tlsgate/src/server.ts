/**
 * Builds the gate from its parts: one TCP listener per route, the observation recorder,
 * periodic pruning and the optional metrics listener. `buildServer` never listens; `start`
 * (called by `serve`) listens, `stop` drains.
 */
import { createServer, type Server, type Socket } from 'node:net'
import { BypassRanges, loadManagedRanges } from '@gatehouse/kit/gate-bypass.ts'
import { ConnectionCap, SourceRateLimiter } from '@gatehouse/kit/gate-limits.ts'
import { createHttpApp, type HttpApp } from '@gatehouse/kit/http.ts'
import type { Logger } from '@gatehouse/kit/logger.ts'
import { type AppMetrics, createMetrics } from '@gatehouse/kit/metrics.ts'
import type { ServeConfig } from './config.ts'
import type { Store } from './db/index.ts'
import { ObservationRecorder } from './fingerprints/recorder.ts'
import { pruneToCap, removeExpiredSightings } from './fingerprints/store.ts'
import { handleTlsClient, type RouteContext } from './gate/connection.ts'
import { createRouteMetrics } from './gate/metrics.ts'
import { formatAddress } from './gate/relay.ts'
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
  })
  const bypass = new BypassRanges(config.trustedRanges, await loadManagedRanges(store.db))
  const limiter = new SourceRateLimiter(config.ipRate, config.ipBurst)
  const cap = new ConnectionCap(config.maxConnections)
  const open = new Set<Socket>()
  const smtpRoutes = config.routes.filter((r) => r.mode === 'smtp')
  const smtpReports = smtpRoutes.length > 0 ? new SmtpReporter(config.smtpNamespace) : undefined
  const contexts: RouteContext[] = config.routes.map((route) => ({
    route,
    db: store.db,
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
    ...(route.mode === 'smtp' && smtpReports ? { onOutcome: (o) => smtpReports.record(route, o) } : {}),
  }))
  const servers: Server[] = contexts.map((ctx) => {
    const handle = ctx.route.mode === 'smtp' ? handleSmtpClient : handleTlsClient
    const server = createServer({ noDelay: true, pauseOnConnect: true }, (socket) => handle(ctx, socket))
    server.on('error', (err) => logger.error({ route: ctx.route.name, reason: err.message }, 'listener error'))
    return server
  })
  let metricsApp: HttpApp | undefined
  if (config.metricsListen) {
    metricsApp = await createHttpApp({
      name: 'tlsgate',
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
    smtpReports,
    async start() {
      for (const [i, server] of servers.entries()) {
        const { host, port } = contexts[i]!.route.listen
        await new Promise<void>((resolve, reject) => {
          server.once('error', reject)
          server.listen({ host, port, backlog: 4096 }, () => {
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
      maintenance.unref()
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
    flush: () => recorder.flush(),
    async stop(drainMs) {
      clearInterval(maintenance)
      // close() stops accepting at once; its callback would wait for every connection, so it is not awaited.
      for (const server of servers) if (server.listening) server.close()
      const deadline = Date.now() + drainMs
      if (open.size > 0) logger.info({ open: open.size, drain_ms: drainMs }, 'draining open connections')
      while (open.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
      for (const socket of open) socket.destroy()
      await recorder.close()
      await metricsApp?.close()
    },
  }
}
