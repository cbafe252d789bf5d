/** Builds the edgegate HTTPS app from the domain modules; never listens (main.ts does). */
import {
  createHttpApp,
  type HttpApp,
  httpsServerOptions,
  type Logger,
  loadTlsMaterial,
  packageVersion,
  systemClock,
} from '@gatehouse/kit'
import { certificateExpiresAt } from '@gatehouse/kit/certificate-expiry.ts'
import { auditRoutes } from './admins/routes.ts'
import { type AlertChannel, alertChannel } from './alerts.ts'
import { makeGuards } from './auth/guards.ts'
import { SESSION_COOKIE } from './auth/principal.ts'
import { sessionRoutes } from './auth/routes.ts'
import type { ServeConfig } from './config.ts'
import type { AppContext } from './context.ts'
import { notFoundPage } from './dashboard/html.ts'
import { dashboardRoutes, PAGE_HEADERS } from './dashboard/routes.ts'
import type { EdgeDatabase } from './db/open.ts'
import { decisionRoutes } from './decisions/routes.ts'
import { enforcementRoutes } from './enforcement/routes.ts'
import { errors } from './errors.ts'
import { nodeRoutes } from './nodes/routes.ts'
import { observationRoutes } from './observations/routes.ts'
import { policyRoutes } from './policy/routes.ts'
import { signalRoutes } from './signals/routes.ts'
import { smtpRoutes } from './smtp/routes.ts'
import type { TrustedRanges } from './trusted/ranges.ts'
import { pairRoutes } from './web/pairs.ts'
import { webRoutes, webSettings } from './web/routes.ts'

export const VERSION = packageVersion(import.meta.dirname)

export interface ServerDeps {
  database: EdgeDatabase
  logger: Logger
  trusted?: TrustedRanges
}

export async function buildServer(
  config: ServeConfig,
  deps: ServerDeps,
): Promise<{ app: HttpApp; ctx: AppContext; alerts: AlertChannel; certificateExpiresAt: number }> {
  const tls = loadTlsMaterial({
    cert: config.tls_cert,
    key: config.tls_key,
    ...(config.client_ca ? { ca: config.client_ca } : {}),
  })
  const app = await createHttpApp({
    name: 'edgegate',
    version: VERSION,
    logger: deps.logger,
    bodyLimit: 1024 * 1024,
    notFoundPage: (path) => {
      const html = notFoundPage(path)
      return html === undefined ? undefined : { html, headers: PAGE_HEADERS }
    },
    // Client certificates are requested, never required: token nodes and browsers connect without one.
    https: httpsServerOptions({ ...tls, requestClientCert: config.client_ca !== undefined }),
    openapi: {
      title: 'edgegate',
      description: 'Edge control plane: gate sync API and administration',
      errors,
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description: 'node token (egn_...) or administrator token (ega_...)',
        },
        nodeCertificate: { type: 'mutualTLS', description: 'a node client certificate issued by the configured CA' },
        session: {
          type: 'apiKey',
          in: 'cookie',
          name: SESSION_COOKIE,
          description: 'dashboard session (POST /api/session)',
        },
      },
      // /v1 is the gates' sync API (node token or certificate); /api is administration (token or
      // dashboard session), apart from signing in (auth/principal.ts).
      security: ({ method, url }) =>
        url.startsWith('/v1/')
          ? [{ bearer: [] }, { nodeCertificate: [] }]
          : url === '/api/session' && method === 'POST'
            ? []
            : url.startsWith('/api/')
              ? [{ bearer: [] }, { session: [] }]
              : undefined,
    },
  })
  app.readiness.add('database', () => deps.database.ping())
  const alerts = alertChannel(config.alert_url, deps.logger, {
    metrics: app.metrics,
    groupWaitMs: config.alert_group_wait,
  })
  const ctx: AppContext = {
    config,
    logger: deps.logger,
    database: deps.database,
    clock: systemClock,
    metrics: app.metrics,
    guards: makeGuards(deps.database.db),
    trusted: deps.trusted,
    settings: {
      sightingRetentionMs: config.sighting_retention,
      sessionTtlMs: config.session_ttl,
      policyPageSize: config.policy_page_size,
    },
    web: webSettings(config),
    alert: alerts.send,
  }
  observationRoutes(app, ctx)
  policyRoutes(app, ctx)
  decisionRoutes(app, ctx)
  signalRoutes(app, ctx)
  smtpRoutes(app, ctx)
  nodeRoutes(app, ctx)
  auditRoutes(app, ctx)
  sessionRoutes(app, ctx)
  webRoutes(app, ctx)
  pairRoutes(app, ctx)
  enforcementRoutes(app, ctx)
  dashboardRoutes(app, ctx)
  return { app, ctx, alerts, certificateExpiresAt: certificateExpiresAt(tls.cert!) }
}
