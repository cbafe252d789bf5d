/**
 * Build the artsvc HTTP app (never listens): one listener serving two origins told apart
 * by the Host header — the management origin (ARTSVC_PUBLIC_URL) and the content origin
 * (ARTSVC_CONTENT_URL). Any other host gets 421. Unsafe methods with ambient credentials
 * (session cookie, edge assertion) must come from the management origin itself.
 */
import { join } from 'node:path'
import cookie from '@fastify/cookie'
import {
  createHttpApp,
  createLogger,
  createMetrics,
  type HttpApp,
  type Logger,
  packageVersion,
  parseDatabaseUrl,
} from '@gatehouse/kit'
import { adminRoutes } from './admin/routes.ts'
import { artifactRoutes } from './artifacts/routes.ts'
import { Authenticator } from './auth/authenticator.ts'
import { BearerVerifier } from './auth/bearer.ts'
import { EDGE_ASSERTION_HEADER, EdgeAccessVerifier } from './auth/edge-access.ts'
import { issuerMetadata } from './auth/issuer.ts'
import { authRoutes } from './auth/routes.ts'
import { SESSION_COOKIE } from './auth/sessions.ts'
import { brandingRoutes } from './branding/routes.ts'
import type { ArtsvcConfig } from './config.ts'
import { ContentCaches } from './content/caches.ts'
import { listenForRevocations } from './content/liveness-notify.ts'
import { contentLoaders } from './content/loaders.ts'
import { CONTENT_HOST_HEADERS } from './content/policy.ts'
import { contentRoutes, installContentPath } from './content/routes.ts'
import type { AppContext } from './context.ts'
import { openArtsvcDatabase } from './db/migrations.ts'
import { errors } from './errors.ts'
import { applyPublisherViewers } from './grants/publisher-viewers.ts'
import { runMaintenance } from './maintenance/maintenance.ts'
import { mcpRoutes } from './mcp/routes.ts'
import { artsvcMetrics } from './metrics.ts'
import { shareRoutes } from './shares/routes.ts'
import { createBlobStore } from './storage/index.ts'
import { prepareDatabaseFolder, prepareStorageRoot } from './storage/root.ts'
import { notFoundPage } from './ui/not-found.ts'
import { uiRoutes } from './ui/routes.ts'
import { uploadRoutes } from './uploads/routes.ts'
import { viewerRoutes } from './viewer/routes.ts'
import { Signer } from './viewer/signing.ts'

export interface ServerDeps {
  logger?: Logger
  /** S3 credentials instead of the SDK's standard chain (tests). */
  s3Credentials?: { accessKeyId: string; secretAccessKey: string }
  now?: () => number
}

export interface Artsvc {
  app: HttpApp
  ctx: AppContext
  maintenance(): ReturnType<typeof runMaintenance>
  close(): Promise<void>
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])
const ANY_HOST = new Set(['/healthz', '/readyz'])

function hostOf(header: string | undefined, defaultPort: string): string {
  const host = (header ?? '').toLowerCase()
  return host.endsWith(`:${defaultPort}`) ? host.slice(0, -(defaultPort.length + 1)) : host
}

export async function buildServer(config: ArtsvcConfig, deps: ServerDeps = {}): Promise<Artsvc> {
  const log = deps.logger ?? createLogger({ name: 'artsvc', level: config.logLevel })
  // Before the database, whose default SQLite file lives under the root. Owner-only: staged
  // and extracted bundles are private artifacts.
  await prepareStorageRoot(config.storageRoot, [
    'staging',
    'tmp',
    ...(config.storageBackend === 'filesystem' ? ['objects'] : []),
  ])
  const { kind, location } = parseDatabaseUrl(config.database)
  if (kind === 'sqlite') await prepareDatabaseFolder(location)
  const database = await openArtsvcDatabase(config.database)
  const store = await createBlobStore(config, deps.s3Credentials)
  const now = deps.now ?? Date.now
  const issuer = config.oidcIssuer
    ? issuerMetadata(config.oidcIssuer, config.oidcClientId, config.oidcClientSecret)
    : undefined
  const bearer = issuer ? new BearerVerifier(issuer, config.oauthAudience, config.oauthScope) : undefined
  const edge =
    config.authMode === 'edge_access'
      ? new EdgeAccessVerifier(config.edgeAccessTeamDomain!, config.edgeAccessAud!, config.edgeAccessJwksUrl)
      : undefined
  const stagingDir = join(config.storageRoot, 'staging')
  const tmpDir = join(config.storageRoot, 'tmp')
  const metrics = createMetrics('artsvc')
  const ctx: AppContext = {
    config,
    logger: log,
    database,
    clock: { now },
    metrics,
    store,
    auth: new Authenticator(config, database.db, bearer, edge, now),
    bearer,
    issuer,
    signer: new Signer(config.cookieSecret),
    caches: new ContentCaches(),
    counters: artsvcMetrics(metrics),
    stagingDir,
    tmpDir,
  }

  try {
    await applyPublisherViewers(database.db, config.publisherViewerMap, now())
  } catch (err) {
    await database.close()
    ;(store as { close?: () => void }).close?.()
    throw err
  }

  const listener = await listenForRevocations(database, ctx.caches, log)

  const app = await createHttpApp({
    name: 'artsvc',
    logger: log,
    bodyLimit: 64 * 1024,
    // A bundle upload is one request: the kit's 5 min, or as long as the largest bundle takes
    // at 64 KiB/s, so a slow uplink is not cut off while a stalled client still is.
    requestTimeoutMs: Math.max(300_000, Math.ceil(config.maxBundleBytes / 65_536) * 1000),
    readyStatus: 204,
    notFoundPage: notFoundPage(ctx),
    version: packageVersion(import.meta.dirname),
    metrics,
    openapi: {
      title: 'artsvc',
      description: 'Artifact publishing service',
      errors,
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'OAuth access token (JWT)' },
        edgeAccess: {
          type: 'apiKey',
          in: 'header',
          name: EDGE_ASSERTION_HEADER,
          description: 'edge_access mode: the signed assertion of the access proxy',
        },
        session: { type: 'apiKey', in: 'cookie', name: SESSION_COOKIE, description: 'oidc mode: browser session' },
      },
      // Signing in is public; every other API route resolves its caller (auth/authenticator.ts).
      security: ({ url }) =>
        url.startsWith('/api/v1/auth/') && url !== '/api/v1/auth/logout'
          ? []
          : url === '/mcp'
            ? [{ bearer: [] }]
            : url.startsWith('/api/v1/')
              ? [{ bearer: [] }, { edgeAccess: [] }, { session: [] }]
              : undefined,
    },
  })
  await app.register(cookie)
  app.readiness.add('database', () => database.ping())
  app.readiness.add('storage', async () => {
    try {
      await store.check()
    } catch (err) {
      throw errors.storage_unavailable.with({ cause: err })
    }
  })

  const publicPort = new URL(config.publicUrl).protocol === 'https:' ? '443' : '80'
  const contentPort = new URL(config.contentUrl).protocol === 'https:' ? '443' : '80'
  app.addHook('onRequest', async (req, reply) => {
    const path = req.url.split('?')[0]!
    if (ANY_HOST.has(path)) return
    const isPublic = hostOf(req.headers.host, publicPort) === config.publicHost
    const isContent = !isPublic && hostOf(req.headers.host, contentPort) === config.contentHost
    if (!isPublic && !isContent) throw errors.misdirected_request()
    const wanted = (req.routeOptions.config as { origin?: string } | undefined)?.origin ?? 'public'
    if (isContent) reply.headers(CONTENT_HOST_HEADERS)
    if (wanted !== (isPublic ? 'public' : 'content')) throw errors.wrong_origin()
    // Ambient credentials (cookies, the edge assertion) may only mutate from our own pages.
    if (isPublic && !SAFE_METHODS.has(req.method) && req.headers.authorization === undefined) {
      const origin = req.headers.origin
      const site = req.headers['sec-fetch-site']
      const ambient = req.headers.cookie !== undefined || req.headers['edge-access-jwt-assertion'] !== undefined
      if (origin !== undefined ? origin !== config.publicOrigin : ambient && site !== 'same-origin') {
        throw errors.origin_mismatch()
      }
    }
  })

  uploadRoutes(app, ctx)
  artifactRoutes(app, ctx)
  shareRoutes(app, ctx)
  adminRoutes(app, ctx)
  authRoutes(app, ctx)
  mcpRoutes(app, ctx, bearer)
  brandingRoutes(app, ctx)
  viewerRoutes(app, ctx)
  uiRoutes(app, ctx)
  const loaders = contentLoaders(ctx)
  contentRoutes(app, ctx, loaders)
  installContentPath(app, ctx, loaders)

  return {
    app,
    ctx,
    maintenance: () => runMaintenance(ctx),
    async close() {
      await listener?.close()
      await app.close()
      await database.close()
      ;(store as { close?: () => void }).close?.()
    },
  }
}
