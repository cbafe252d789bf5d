/**
 * The HTTP app factory every Gatehouse service builds on: Fastify 5 with TypeBox
 * schemas, strict JSON validation, the shared JSON error format, body limits,
 * request ids, `/healthz`, `/readyz`, `/metrics` and `/openapi.json`.
 *
 * `createHttpApp` never listens; `main.ts` of each app does (see `runMain`).
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import type { ServerOptions as HttpsServerOptions } from 'node:https'
import swagger from '@fastify/swagger'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Ajv, type Options as AjvOptions } from 'ajv'
import addFormatsModule from 'ajv-formats'
import Fastify, { type FastifyBaseLogger, type FastifyError, type FastifyInstance, LogController } from 'fastify'
import { type OpenApiExtras, openApiErrorParts, registerDocs } from './docs.ts'
import { AppError, kitErrors } from './errors.ts'
import { type HostGuardOptions, installHostGuard } from './host-guard.ts'
import { installNotFound, type NotFoundPageFn, sendError } from './http-errors.ts'
import { installLane } from './http-lane.ts'
import { HttpRequestMetrics } from './http-metrics.ts'
import { fixedFieldLogger, type Logger, requestIdFrom } from './logger.ts'
import { type AppMetrics, createMetrics } from './metrics.ts'
import { openFileLimit } from './open-files.ts'
import { installNulGuard } from './text-guard.ts'

export type HttpApp = FastifyInstance<Server, IncomingMessage, ServerResponse, FastifyBaseLogger, TypeBoxTypeProvider>

export type ReadinessCheck = () => Promise<void> | void

export interface Readiness {
  /** Register a dependency check; it throws (or rejects) while the dependency is unusable. */
  add(name: string, check: ReadinessCheck): void
  /** Run every check; returns the names of the failing ones with their public reason. */
  run(): Promise<Record<string, string>>
}

/** What a fast path sees of a request (an IncomingMessage, or a request the HTTP lane parsed). */
export interface FastRequest {
  readonly method?: string
  readonly url?: string
  /** Lower-case names. */
  readonly headers: Readonly<Record<string, string | string[] | undefined>>
}

/** A fast path's complete answer. */
export interface FastAnswer {
  status: number
  /**
   * Flat `[name, value, …]` without `x-request-id` (the kit adds it), `content-length`
   * included for a 200. Reuse one array per distinct answer: the lane caches its bytes.
   */
  headers: readonly string[]
  /** A latin1 string (one char per byte) or bytes; none for 304 (HEAD drops it). */
  body?: string | Buffer
  /** The route pattern, for the metrics and the access line as Fastify's routes get. */
  route: string
}

/**
 * A request handler tried before Fastify, for a hot path where Fastify's and node:http's own
 * per-request work costs more than the answer (artsvc's cached content responses). It answers
 * synchronously from memory, or returns undefined and Fastify handles the request as usual.
 * It runs in the kit's HTTP lane (`http-lane.ts`) or, on a connection node:http holds, behind
 * node:http. It is not called while the server is closing, so Fastify's 503 still applies.
 */
export type FastPath = (req: FastRequest) => FastAnswer | undefined

/**
 * For a request the fast path declined in the HTTP lane: a promise that settles once the fast
 * path may answer it (its caches filled), or undefined when it never will (an error, another
 * route). The lane holds the connection meanwhile and asks the fast path again, so that a cold
 * cache does not send the connection to node:http for the rest of its life. Its outcome does
 * not matter: declined again, the request takes the full path, which decides and reports.
 */
export type FastWarm = (req: FastRequest) => Promise<unknown> | undefined

export interface FastPathOptions {
  /** In the kit's HTTP lane (default), or behind node:http only (the lane's tests and benchmarks compare both). */
  lane?: boolean
  warm?: FastWarm
}

declare module 'fastify' {
  interface FastifyInstance {
    readiness: Readiness
    metrics: AppMetrics
    /** Put a `FastPath` in front of Fastify (at most one per app); see `FastPathOptions`. */
    setFastPath(handler: FastPath, options?: FastPathOptions): void
  }
}

export interface HttpAppOptions {
  /** App name: metrics prefix (`<name>_`) and the OpenAPI title when none is given. */
  name: string
  version?: string
  logger: Logger
  /** Largest accepted request body in bytes (default 1 MiB). */
  bodyLimit?: number
  /**
   * How long a client may take to send a whole request, headers and body, in ms (default 5 min,
   * node:http's own default, which Fastify turns off; 0: no limit). Past it node:http answers 408
   * and closes the connection. Without it a client that sent headers and then nothing, or a byte
   * now and then, held its connection for ever, and enough of them exhausted the process's
   * descriptors. The headers alone have 60 s (node:http's `headersTimeout`). Answers may take as
   * long as they need: an event stream is not bounded by this.
   */
  requestTimeoutMs?: number
  /**
   * Connections held at once (default: three quarters of the process's open-file limit, keeping
   * the rest, at least 64, for the app's own files, database and outgoing connections). Past it
   * node:http closes a new connection at once; each is counted
   * (`<app>_http_connections_refused_total`) and logged at most every 10 s. Without a bound, the
   * limit itself stopped accept(): libuv then closed waiting connections unseen, and the app's own
   * database, push and storage connections failed with EMFILE.
   */
  maxConnections?: number
  /** HTTPS server options (see `tls.ts`); plain HTTP when absent. */
  https?: HttpsServerOptions
  /** Trust `X-Forwarded-*` from these proxies (default: trust nobody). */
  trustProxy?: boolean | string | string[]
  openapi?: { title?: string; description?: string } & OpenApiExtras
  /** Serve `/healthz`, `/readyz`, `/metrics`, `/openapi.json` (default true each). */
  routes?: { health?: boolean; metrics?: boolean; openapi?: boolean; docs?: boolean }
  /** Status of a ready `/readyz`: 200 with a JSON body (default) or 204. */
  readyStatus?: 200 | 204
  /** Log one line per completed request (default true). */
  accessLog?: boolean
  /** Use this metrics registry instead of creating one. */
  metrics?: AppMetrics
  /** For a listener that relies on being loopback-only: refuse other Host headers (see host-guard.ts). */
  hostGuard?: HostGuardOptions
  /**
   * The app's own "not found" page for a browser: a GET or HEAD that asks for HTML (its `Accept`
   * names `text/html`) at an address no route takes gets this page with status 404 instead of the
   * JSON error, with the headers the answer names (the pages' CSP: no route handler runs for
   * it). Return undefined to keep the JSON answer (an API path, or a listener without pages:
   * `req.raw.socket` says which one took the request). It may be async (a page themed from the
   * database); if it throws, the JSON answer goes out and the log says why. The app's hooks run
   * first as for any request (an `onRequest` guard may answer instead).
   */
  notFoundPage?: NotFoundPageFn
}

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv

// Bodies are strict: no coercion, and `additionalProperties: false` rejects unknown fields
// (Fastify's default ajv silently removes them). Query strings and path parameters are
// text on the wire, so they are coerced to the schema's types.
function makeAjv(options: AjvOptions): Ajv {
  const ajv = new Ajv({ allErrors: false, useDefaults: true, strict: false, ...options })
  addFormats(ajv)
  return ajv
}

/** Three quarters of the open-file limit: room for the app's own descriptors (at least 64). */
function connectionsWithinFileLimit(): number | undefined {
  const limit = openFileLimit()
  return limit === undefined ? undefined : Math.max(1, limit - Math.max(64, Math.floor(limit / 4)))
}

/** node:http refuses connections past `max` itself; count and log them (at most every 10 s). */
function boundConnections(app: HttpApp, max: number | undefined, metrics: AppMetrics): void {
  if (max === undefined) return
  const server = app.server
  server.maxConnections = max
  const refused = metrics.counter(
    'http_connections_refused_total',
    'connections closed on arrival because the server already held its maximum',
  )
  let unlogged = 0
  let loggedAt = Number.NEGATIVE_INFINITY
  server.on('drop', () => {
    refused.inc()
    unlogged++
    const now = performance.now()
    if (now - loggedAt < 10_000) return
    app.log.warn(
      { max_connections: max, refused: unlogged },
      'connections refused: the server holds as many as the open file limit leaves room for; raise it (LimitNOFILE= in a systemd unit, ulimit -n in a shell)',
    )
    unlogged = 0
    loggedAt = now
  })
}

/**
 * Build a Fastify app with the shared conventions.
 *
 * @example
 * const app = await createHttpApp({ name: 'dnsctl', logger })
 * app.readiness.add('database', () => db.ping())
 * app.get('/v1/zones', { schema: { response: { 200: ZoneList } } }, handler)
 */
export async function createHttpApp(options: HttpAppOptions): Promise<HttpApp> {
  const bodyLimit = options.bodyLimit ?? 1024 * 1024
  const requestTimeout = options.requestTimeoutMs ?? 300_000
  // node:http checks for expired requests every 30 s, more often for a shorter limit. The headers'
  // own limit must not exceed the whole request's: node:http swaps the two when it does.
  const serverOptions = {
    connectionsCheckingInterval: requestTimeout > 0 ? Math.min(30_000, Math.max(100, requestTimeout / 4)) : 30_000,
    ...(requestTimeout > 0 ? { headersTimeout: Math.min(60_000, requestTimeout) } : {}),
  }
  const app = Fastify({
    loggerInstance: options.logger,
    // Fastify's own per-request lines are replaced by the access log below; the option
    // moved into LogController (the top-level ones warn FSTDEP023/FSTDEP024 at startup).
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'request_id' }),
    bodyLimit,
    requestTimeout,
    trustProxy: options.trustProxy ?? false,
    genReqId: (req: IncomingMessage) => requestIdFrom(req.headers['x-request-id']),
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: 500 },
    ...(options.https ? { https: { ...options.https, ...serverOptions } } : { http: serverOptions }),
  } as never) as unknown as HttpApp

  const bodyAjv = makeAjv({ coerceTypes: false, removeAdditional: false })
  const textAjv = makeAjv({ coerceTypes: 'array', removeAdditional: false })
  app.setValidatorCompiler(({ schema, httpPart }) =>
    (httpPart === 'body' ? bodyAjv : textAjv).compile(schema as object),
  )

  const metrics = options.metrics ?? createMetrics(options.name, options.version)
  app.decorate('metrics', metrics)
  boundConnections(app, options.maxConnections ?? connectionsWithinFileLimit(), metrics)
  const requests = new HttpRequestMetrics(metrics, [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10])

  const checks = new Map<string, ReadinessCheck>()
  const readiness: Readiness = {
    add(name, check) {
      if (checks.has(name)) throw new TypeError(`readiness check ${name} is registered twice`)
      checks.set(name, check)
    },
    async run() {
      const failing: Record<string, string> = {}
      await Promise.all(
        [...checks].map(async ([name, check]) => {
          try {
            await withTimeout(Promise.resolve().then(check), 5000, `${name} check timed out`)
          } catch (err) {
            failing[name] = err instanceof AppError ? err.message : `${name} is unusable`
            app.log.warn({ check: name, err }, 'readiness check failed')
          }
        }),
      )
      return failing
    },
  }
  app.decorate('readiness', readiness)

  app.addHook('onRequest', async (req, reply) => {
    reply.header('x-request-id', req.id)
  })
  if (options.hostGuard) installHostGuard(app, options.hostGuard)
  installNulGuard(app)

  // The access line carries only fixed, non-secret fields, so it skips the redaction pass
  // (which more than doubles the cost of a line); every other log line keeps it.
  const accessLog = (options.accessLog ?? true) ? fixedFieldLogger(options.logger) : undefined
  app.addHook('onResponse', async (req, reply) => {
    // The route pattern, never the raw URL: paths and queries can carry tokens.
    const route = req.routeOptions.url ?? 'unmatched'
    requests.record(req.method, route, reply.statusCode, reply.elapsedTime / 1000)
    accessLog?.info(
      {
        request_id: req.id,
        method: req.method,
        route,
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime * 100) / 100,
      },
      'request',
    )
  })

  let fastPathSet = false
  app.decorate('setFastPath', (handler: FastPath, fastOptions: FastPathOptions = {}) => {
    const server = app.server
    const listeners = server.listeners('request')
    if (fastPathSet) throw new TypeError('setFastPath: this app already has a fast path')
    if (listeners.length !== 1)
      throw new TypeError(
        `setFastPath expects Fastify's request listener alone on the server (found ${listeners.length})`,
      )
    fastPathSet = true
    const fastify = listeners[0] as (req: IncomingMessage, res: ServerResponse) => void
    const record = (method: string, route: string, status: number, started: number, id: string) => {
      const ms = performance.now() - started
      requests.record(method, route, status, ms / 1000)
      accessLog?.info({ request_id: id, method, route, status, ms: Math.round(ms * 100) / 100 }, 'request')
    }
    const decide = (req: FastRequest): FastAnswer | undefined => {
      try {
        return handler(req)
      } catch (err) {
        app.log.error({ err }, 'fast path failed; the full path answers')
        return undefined
      }
    }
    const laneCount = (name: string, help: string) => {
      const counter = metrics.counter(name, help)
      return () => counter.inc()
    }
    const lane =
      fastOptions.lane === false
        ? undefined
        : installLane(server, {
            held: laneCount(
              'http_lane_held_total',
              'Requests the HTTP lane held while the fast path warmed its caches',
            ),
            handedOver: laneCount(
              'http_lane_handovers_total',
              'Connections the HTTP lane handed to node:http (a request outside its subset, or one the fast path declined)',
            ),
            closing: () => !server.listening,
            answer(req) {
              const answer = decide(req)
              if (answer === undefined) return undefined
              return {
                status: answer.status,
                headers: answer.headers,
                body: answer.body,
                requestId: requestIdFrom(req.headers['x-request-id']),
                route: answer.route,
              }
            },
            ...(fastOptions.warm !== undefined ? { warm: fastOptions.warm } : {}),
            answered(req, answer, started) {
              record(req.method, answer.route, answer.status, started, answer.requestId)
            },
            failed(err) {
              app.log.error({ err }, 'fast path failed; the full path answers')
            },
          })
    if (lane) {
      // node:http's own server.close() ends its idle connections through this; the lane's are idle too.
      const closeIdle = server.closeIdleConnections
      server.closeIdleConnections = function closeIdleConnections(this: Server) {
        closeIdle.call(this)
        lane.closeIdle()
      }
    }
    server.removeListener('request', fastify)
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      if (!server.listening) return fastify.call(server, req, res)
      const started = performance.now()
      const answer = decide(req)
      if (answer === undefined) return fastify.call(server, req, res)
      const id = requestIdFrom(req.headers['x-request-id'])
      try {
        res.writeHead(answer.status, [...answer.headers, 'x-request-id', id])
      } catch (err) {
        app.log.error({ err, request_id: id }, 'fast path failed; the full path answers')
        return fastify.call(server, req, res)
      }
      if (typeof answer.body === 'string') res.end(answer.body, 'latin1')
      else res.end(answer.body)
      record(req.method ?? 'GET', answer.route, answer.status, started, id)
    })
  })

  app.setErrorHandler((err: FastifyError | AppError | Error, req, reply) => sendError(app, err, req, reply, bodyLimit))
  installNotFound(app, options.notFoundPage)

  const routes = options.routes ?? {}
  if (routes.openapi !== false) {
    const errorParts = openApiErrorParts(kitErrors, options.openapi ?? {})
    await app.register(swagger, {
      transform: errorParts.transform as never,
      openapi: {
        openapi: '3.1.0',
        components: errorParts.components as never,
        info: {
          title: options.openapi?.title ?? options.name,
          version: options.version ?? '0.0.0',
          ...(options.openapi?.description ? { description: options.openapi.description } : {}),
        },
      },
    })
    app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger())
    if (routes.docs !== false) await registerDocs(app)
  }
  if (routes.health !== false) {
    app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }))
    app.get('/readyz', { schema: { hide: true } }, async (_req, reply) => {
      const failing = await readiness.run()
      const names = Object.keys(failing)
      if (names.length > 0) {
        return reply.code(503).send({
          error: { code: 'not_ready', message: `not ready: ${names.join(', ')}`, checks: failing },
        })
      }
      if (options.readyStatus === 204) return reply.code(204).send()
      return { status: 'ready' }
    })
  }
  if (routes.metrics !== false) {
    app.get('/metrics', { schema: { hide: true } }, async (_req, reply) => {
      reply.header('content-type', metrics.registry.contentType)
      return metrics.registry.metrics()
    })
  }
  return app
}

function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}
