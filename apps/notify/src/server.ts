/**
 * Builds the notification service's HTTP app from the domain modules. Never listens:
 * `main.ts` (or a test) does.
 */

import rateLimit from '@fastify/rate-limit'
import {
  createHttpApp,
  type Database,
  type HttpApp,
  type ListenSession,
  type Logger,
  packageVersion,
  systemClock,
} from '@gatehouse/kit'
import { actionRoutes } from './actions/routes.ts'
import { slashRoutes } from './actions/slash-routes.ts'
import { auditRoutes } from './audit/routes.ts'
import { createGuard, LOCAL_READER_NAME, type Reader, toReader } from './auth/guard.ts'
import { authRoutes } from './auth/routes.ts'
import { channelEditRoutes } from './channels/edit.ts'
import { channelRoutes } from './channels/routes.ts'
import type { Config } from './config.ts'
import type { Context } from './context.ts'
import type { NotifyDatabase } from './db/open.ts'
import type { DB } from './db/schema.ts'
import { desktopRoutes } from './desktop/routes.ts'
import { errors } from './errors.ts'
import { type Housekeeping, startHousekeeping } from './housekeeping.ts'
import { SearchIndexer } from './inbox/indexer.ts'
import { inboxRoutes } from './inbox/routes.ts'
import { unreadRoutes } from './inbox/unread.ts'
import { ingestRoutes } from './ingest/routes.ts'
import { oidcRoutes } from './oidc/routes.ts'
import { setUpPush } from './push/service.ts'
import { STREAM_PG_CHANNEL } from './realtime/changes.ts'
import { StreamHub } from './realtime/hub.ts'
import { streamRoutes } from './realtime/routes.ts'
import { ActionKeys } from './settings/action-key.ts'
import { readerTokenRoutes } from './tokens/routes.ts'
import { userRoutes } from './users/routes.ts'
import { UserService } from './users/service.ts'
import { notFoundPage } from './web/not-found.ts'
import { webRoutes } from './web/routes.ts'
import { webhookRoutes } from './webhooks/routes.ts'
import { ensureDevelopmentHook } from './webhooks/service.ts'

export const VERSION = packageVersion(import.meta.dirname)

export interface Deps {
  database: NotifyDatabase
  logger: Logger
  /** SQLite: pause between search indexer passes (tests set a long one to see the unindexed tail). */
  searchIndexIntervalMs?: number
  /** Realtime safety-net poll (ms; tests set a long one to prove PostgreSQL LISTEN delivers). */
  streamPollMs?: number
  /** Web Push: extra CA certificates trusted for push endpoints (tests' push service double). */
  pushCa?: string | Buffer
  /** Between housekeeping runs (tests; default an hour). */
  housekeepingIntervalMs?: number
}

/** Bootstrap state from the configuration: the administrator, the development reader and hook. */
async function bootstrap(config: Config, database: Database<DB>, users: UserService): Promise<Reader | undefined> {
  if (config.readerUsername !== undefined && config.readerPassword !== undefined) {
    await users.ensureBootstrapAdmin(config.readerUsername, config.readerPassword)
  }
  if (config.hookToken !== undefined) await ensureDevelopmentHook(database.db, config.hookToken, config.hookChannel)
  if (!config.auth) return toReader(await users.ensureLocalReader(LOCAL_READER_NAME))
  return undefined
}

export async function buildServer(config: Config, deps: Deps): Promise<HttpApp> {
  const { database, logger } = deps
  const users = new UserService(database.db, config.bcryptCost)
  const localReader = await bootstrap(config, database, users)
  const app = await createHttpApp({
    name: 'notify',
    version: VERSION,
    logger,
    bodyLimit: config.bodyLimit,
    trustProxy: false,
    notFoundPage,
    // Development mode has no authentication and relies on loopback: refuse DNS rebinding.
    ...(config.auth ? {} : { hostGuard: {} }),
    openapi: {
      title: 'Gatehouse notification service',
      errors,
      securitySchemes: {
        session: {
          type: 'apiKey',
          in: 'cookie',
          name: 'notify_session',
          description: 'reader session (POST /api/v1/auth/login)',
        },
        readerToken: {
          type: 'http',
          scheme: 'bearer',
          description: 'reader API token ntr_... (POST /api/v1/me/tokens)',
        },
        hookToken: {
          type: 'http',
          scheme: 'bearer',
          description: 'hook token, for POST /api/v1/notifications and /api/v1/messages',
        },
      },
      // Hooks carry their token in the URL or as a bearer; sign-in is public; every other API
      // route takes a reader's session cookie or API token (guard.ts).
      security: ({ method, url }) =>
        url.startsWith('/hooks/')
          ? []
          : method === 'POST' && (url === '/api/v1/notifications' || url === '/api/v1/messages')
            ? [{ hookToken: [] }]
            : url.startsWith('/api/v1/auth/') && url !== '/api/v1/auth/logout'
              ? []
              : url.startsWith('/api/v1/')
                ? [{ session: [] }, { readerToken: [] }]
                : undefined,
    },
  })
  app.decorateRequest('reader', null)
  app.readiness.add('database', () => database.ping())
  const guard = createGuard(config, database.db, localReader)
  app.addHook('onRequest', async (req) => guard.checkOrigin(req))
  // Responses carry reader data or one-time secrets: never cache them.
  app.addHook('onSend', async (_req, reply) => {
    reply.header('cache-control', 'no-store')
  })
  const hub = new StreamHub(database.db, logger, deps.streamPollMs ? { pollMs: deps.streamPollMs } : {})
  const actionKeys = new ActionKeys(database.db, config.actionKey)
  if (config.actionKey !== undefined && !actionKeys.bootstrapValid) {
    logger.warn('NOTIFY_ACTION_KEY is not 32 bytes (base64, base64url or 64 hex digits); it is ignored')
  }
  // Push delivery follows the same wake-ups as the stream (set below, once it exists).
  let push: { wake(): void } | undefined
  const wake = () => {
    hub.wake()
    push?.wake()
  }
  const ctx: Context = {
    actionKeys,
    config,
    database,
    logger,
    clock: systemClock,
    guard,
    users,
    metrics: app.metrics,
    stream: { wake },
  }
  // Per-process limits for the desktop handoffs (desktop/routes.ts); sign-in counts in the database.
  await app.register(rateLimit, { global: false })
  authRoutes(app, ctx)
  userRoutes(app, ctx)
  readerTokenRoutes(app, ctx)
  channelRoutes(app, ctx)
  channelEditRoutes(app, ctx)
  webhookRoutes(app, ctx)
  ingestRoutes(app, ctx)
  inboxRoutes(app, ctx)
  unreadRoutes(app, ctx)
  streamRoutes(app, ctx, hub)
  push = await setUpPush(app, ctx, deps.pushCa ? { ca: deps.pushCa } : {})
  webRoutes(app)
  // Issue #21: action targets and invocation, slash commands, the audit log, sign-in.
  const invocations = app.metrics.counter(
    'action_invocations_total',
    'Action target calls (card actions and slash commands) by outcome; replays are not counted',
    ['outcome'],
  )
  const invokeDeps = {
    db: database.db,
    keys: ctx.actionKeys,
    limits: { timeoutMs: config.actionTimeout, maxBytes: config.actionResponseLimit },
    userAgent: `gatehouse-notify/${VERSION}`,
    onOutcome: (outcome: 'success' | 'failure') => invocations.inc({ outcome }),
  }
  actionRoutes(app, ctx, invokeDeps)
  slashRoutes(app, ctx, invokeDeps)
  auditRoutes(app, ctx)
  oidcRoutes(app, ctx)
  desktopRoutes(app, ctx)
  // PostgreSQL: every process's commits queue a NOTIFY (realtime/changes.ts, ingest/write-queue.ts),
  // so each process's hub and push run a pass as soon as anything is committed anywhere. NOTIFYs
  // sent while the session was down are lost: the pass on its return reads them by position.
  let listener: ListenSession | undefined
  app.addHook('onReady', async () => {
    await hub.start()
    listener = await database.listen?.(STREAM_PG_CHANNEL, { onNotify: wake, onUp: wake, logger })
  })
  // Before the server closes: open streams would otherwise keep it waiting.
  app.addHook('preClose', async () => {
    await listener?.close()
    await hub.close()
  })
  const indexer = new SearchIndexer(database, logger, deps.searchIndexIntervalMs)
  app.addHook('onReady', async () => indexer.start())
  app.addHook('onClose', async () => indexer.stop())
  let housekeeping: Housekeeping | undefined
  app.addHook('onReady', async () => {
    housekeeping = startHousekeeping(
      database.db,
      database.kind,
      {
        retentionMs: config.retention,
        auditRetentionMs: config.auditRetention,
        streamRetentionMs: config.streamRetention,
        ...(deps.housekeepingIntervalMs ? { intervalMs: deps.housekeepingIntervalMs } : {}),
      },
      logger,
      app.metrics,
    )
  })
  app.addHook('onClose', async () => housekeeping?.stop())
  return app
}
