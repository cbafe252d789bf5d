/**
 * The process side both gates (sshproxy, tlsgate) share around their connection handlers: one
 * TCP listener per route, the optional metrics listener (`/metrics`, `/healthz`, `/readyz` with
 * the database as readiness), store maintenance every minute (entry cap, sighting retention,
 * rate-limiter sweep), and the drain on stop. Each gate builds its route contexts and handler;
 * this starts and stops them.
 *
 * @example
 * const runtime = await gateRuntime({ app: 'tlsgate', version, routes, handle, store, logger, metrics, ... })
 * await runtime.start(); ...; await runtime.stop(drainMs)
 */
import { createServer, type Server, type Socket } from 'node:net'
import type { Kysely } from 'kysely'
import type { SourceRateLimiter } from './gate-limits.ts'
import { type GateStoreDB, pruneToCap, removeExpiredSightings } from './gate-store.ts'
import { markExpiries } from './gate-verdict.ts'
import { createHttpApp, type HttpApp } from './http.ts'
import type { Logger } from './logger.ts'
import type { AppMetrics } from './metrics.ts'
import { formatListenAddress, type ListenAddress } from './net.ts'
import { type PeriodicJob, periodic } from './periodic.ts'

export interface GateRoute {
  /** The listen address as written: the `route` label and log field. */
  name: string
  listen: ListenAddress
  backend: ListenAddress
}

export interface GateRuntimeOptions<R extends GateRoute> {
  app: string
  version: string
  routes: readonly R[]
  /** One accepted client socket of `route`. */
  handle(route: R, socket: Socket): void
  store: { db: Kysely<GateStoreDB>; ping(): Promise<void> }
  logger: Logger
  metrics: AppMetrics
  metricsListen?: ListenAddress | undefined
  maxFingerprints: number
  sightingRetentionMs: number
  limiter: SourceRateLimiter
  /** Open client sockets (the handlers add and remove them), destroyed after the drain. */
  open: Set<Socket>
  /** How often pruning and sighting cleanup run (default 60 s). */
  maintenanceIntervalMs?: number | undefined
  /** Hand accepted sockets over paused (the handler resumes them when it wants bytes). */
  pauseOnConnect?: boolean
}

export interface GateRuntime {
  /** Listen on every route in order, then the metrics address; run maintenance once and then periodically. */
  start(): Promise<void>
  /** The bound address of each route, in configuration order (after `start`). */
  addresses(): { route: string; host: string; port: number }[]
  metricsAddress(): { host: string; port: number } | undefined
  /** Stop accepting, let open connections finish for up to `drainMs`, then destroy the rest. */
  stop(drainMs: number): Promise<void>
}

export async function gateRuntime<R extends GateRoute>(o: GateRuntimeOptions<R>): Promise<GateRuntime> {
  const { logger, store } = o
  const servers: Server[] = o.routes.map((route) => {
    const server = createServer({ noDelay: true, pauseOnConnect: o.pauseOnConnect === true }, (socket) =>
      o.handle(route, socket),
    )
    server.on('error', (err) => logger.error({ route: route.name, reason: err.message }, 'listener error'))
    return server
  })
  let metricsApp: HttpApp | undefined
  if (o.metricsListen) {
    metricsApp = await createHttpApp({
      name: o.app,
      version: o.version,
      logger,
      metrics: o.metrics,
      routes: { health: true, metrics: true, openapi: false },
      accessLog: false,
    })
    metricsApp.readiness.add('database', () => store.ping())
  }
  const maintain = async () => {
    const now = new Date()
    const pruned = await pruneToCap(store.db, o.maxFingerprints, now.toISOString())
    const before = new Date(now.getTime() - o.sightingRetentionMs).toISOString()
    const expired = await removeExpiredSightings(store.db, before)
    const ended = await markExpiries(store.db, now.toISOString())
    o.limiter.sweep()
    if (pruned > 0 || expired > 0 || ended > 0)
      logger.info({ pruned, expired_sighting_rows: expired, decisions_expired: ended }, 'store maintenance')
  }
  let maintenance: PeriodicJob | undefined
  return {
    async start() {
      for (const [i, server] of servers.entries()) {
        const route = o.routes[i]!
        await new Promise<void>((resolve, reject) => {
          server.once('error', reject)
          server.listen({ host: route.listen.host, port: route.listen.port, backlog: 4096 }, () => {
            server.off('error', reject)
            resolve()
          })
        })
        logger.info({ route: route.name, backend: formatListenAddress(route.backend) }, 'listening')
      }
      if (metricsApp && o.metricsListen) {
        await metricsApp.listen({ host: o.metricsListen.host, port: o.metricsListen.port })
      }
      maintenance = periodic(maintain, {
        intervalMs: o.maintenanceIntervalMs ?? 60_000,
        metrics: { app: o.metrics, job: 'store_maintenance' },
        onError: (err) => logger.error({ reason: (err as Error).message }, 'store maintenance failed'),
      })
      await maintenance.run()
    },
    addresses() {
      return servers.map((s, i) => {
        const a = s.address()
        return {
          route: o.routes[i]!.name,
          host: o.routes[i]!.listen.host,
          port: a && typeof a === 'object' ? a.port : 0,
        }
      })
    },
    metricsAddress() {
      const a = metricsApp?.server.address()
      return a && typeof a === 'object' ? { host: a.address, port: a.port } : undefined
    },
    async stop(drainMs) {
      // The caller closes the store next: a pass in progress ends first.
      const maintained = maintenance?.stop()
      // close() stops accepting at once; its callback would wait for every connection, so it is not awaited.
      for (const server of servers) if (server.listening) server.close()
      const deadline = Date.now() + drainMs
      if (o.open.size > 0) logger.info({ open: o.open.size, drain_ms: drainMs }, 'draining open connections')
      while (o.open.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
      for (const socket of o.open) socket.destroy()
      await metricsApp?.close()
      await maintained
    },
  }
}
