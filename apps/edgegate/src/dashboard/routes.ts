/**
 * The administrator dashboard, rendered on the server. Signing in exchanges an
 * administrator token for a session cookie (HttpOnly, Secure, SameSite=Strict); the page's
 * buttons call the JSON API, whose cookie-authenticated writes are origin-checked.
 */
import { formatDuration, type HttpApp } from '@gatehouse/kit'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { listAudit } from '../admins/store.ts'
import { resolvePrincipal } from '../auth/principal.ts'
import type { AppContext } from '../context.ts'
import { toDecision } from '../decisions/service.ts'
import { decisionsFor, listDecisions } from '../decisions/store.ts'
import { enforcementStatus } from '../enforcement/routes.ts'
import { coverage } from '../enforcement/service.ts'
import { listNodes } from '../nodes/store.ts'
import { fromRow } from '../observations/merge.ts'
import { listFingerprints } from '../observations/store.ts'
import { recentSignals } from '../signals/store.ts'
import { currentReports } from '../smtp/service.ts'
import { formatMillis } from '../timestamps.ts'
import { listPairs } from '../web/pair-store.ts'
import { candidateJson } from '../web/routes.ts'
import { buildReport, reportInterval } from '../web/service.ts'
import { DASHBOARD_CSS, DASHBOARD_JS } from './assets.ts'
import type { SignedIn } from './html.ts'
import { auditPage, pairsPage, smtpPage } from './more-views.ts'
import { overviewPage, signInPage } from './pages.ts'
import { decisionsPage, signalsPage, webPage } from './views.ts'

const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

type View = (req: FastifyRequest, admin: SignedIn) => Promise<string>

/** Every dashboard page's headers, the "not found" page's too (server.ts). */
export const PAGE_HEADERS: Record<string, string> = {
  'content-security-policy': CSP,
  'x-frame-options': 'DENY',
  'cache-control': 'no-store',
}

function pageHeaders(reply: FastifyReply): FastifyReply {
  return reply.headers(PAGE_HEADERS)
}

/** A server-rendered administrator view: the sign-in page without a session. */
function page(ctx: AppContext, view: View) {
  return async (req: FastifyRequest, reply: FastifyReply) => {
    pageHeaders(reply).type('text/html; charset=utf-8')
    let principal: Awaited<ReturnType<typeof resolvePrincipal>>
    try {
      principal = await resolvePrincipal(ctx.database.db, req)
    } catch {
      principal = undefined
    }
    if (principal?.type !== 'admin') return signInPage()
    return view(req, {
      name: principal.name,
      tokenExpiresMs: principal.tokenExpiresMs,
      session: principal.via === 'session',
    })
  }
}

/** A query-string value the views accept: one short string, or nothing. */
function param(req: FastifyRequest, name: string): string | undefined {
  const v = (req.query as Record<string, unknown>)[name]
  return typeof v === 'string' && v !== '' && v.length <= 256 ? v : undefined
}

export function dashboardRoutes(app: HttpApp, ctx: AppContext) {
  app.get(
    '/',
    { schema: { hide: true } },
    page(ctx, async (req, admin) => {
      const q = (req.query as Record<string, unknown>).instance
      const instance = typeof q === 'string' && q !== '' ? q : undefined
      const scope = instance === undefined ? {} : { instanceId: instance }
      const [nodes, rows, decisions, reports] = await Promise.all([
        listNodes(ctx.database.db),
        listFingerprints(ctx.database.db, { ...scope, limit: 200, offset: 0 }),
        listDecisions(ctx.database.db, {
          ...(instance === undefined ? {} : { scopeId: instance }),
          limit: 50,
          offset: 0,
        }),
        currentReports(ctx.database.db),
      ])
      const byPair = await decisionsFor(ctx.database.db, rows)
      const fingerprints = rows.map((row) => {
        const d = byPair.get(`${row.instance_id}/${row.fingerprint}`)
        return { instance_id: row.instance_id, aggregate: fromRow(row), decision: d ? toDecision(d) : undefined }
      })
      return overviewPage({
        admin,
        instance,
        nodes,
        fingerprints,
        decisions: decisions.map(toDecision),
        reports,
      })
    }),
  )

  app.get(
    '/decisions',
    { schema: { hide: true } },
    page(ctx, async (req, admin) => {
      const f = { instance: param(req, 'instance'), status: param(req, 'status'), source: param(req, 'source') }
      const status = ['approved', 'blocked', 'pending'].includes(f.status ?? '') ? f.status : undefined
      const [rows, gates] = await Promise.all([
        listDecisions(ctx.database.db, {
          ...(f.instance ? { scopeId: f.instance } : {}),
          ...(status ? { status } : {}),
          ...(f.source ? { source: f.source } : {}),
          limit: 500,
          offset: 0,
        }),
        listNodes(ctx.database.db, ['sshgate', 'tlsgate']),
      ])
      return decisionsPage(
        admin,
        rows,
        gates.map((g) => g.instance_id),
        { ...f, status },
        Date.now(),
      )
    }),
  )

  app.get(
    '/web',
    { schema: { hide: true } },
    page(ctx, async (req, admin) => {
      const now = Date.now()
      const asked = param(req, 'window')
      const window = asked && ['5m', '15m', '30m'].includes(asked) ? asked : undefined
      const interval = reportInterval(window ? { window } : {}, ctx.web.windowMs, now)
      const [status, report, nodes] = await Promise.all([
        enforcementStatus(ctx),
        buildReport(ctx.database.db, ctx.database.kind, interval, ctx.web.policy, now),
        listNodes(ctx.database.db, ['tlsgate', 'websignal', 'log_watcher']),
      ])
      const covered = await coverage(ctx.database.db, status.enforcement_mode, ctx.web.canaryNodes)
      return webPage(
        admin,
        status,
        {
          from: formatMillis(interval.fromMs),
          to: formatMillis(interval.toMs),
          window_seconds: interval.windowMs / 1000,
          truncated: report.truncated,
          candidates: report.candidates.map((c) => candidateJson(c, covered(c.instance_id))),
        },
        window ?? formatDuration(ctx.web.windowMs),
        {
          tlsgate: nodes.filter((n) => n.kind === 'tlsgate').map((n) => n.instance_id),
          websignal: nodes.filter((n) => n.kind !== 'tlsgate').map((n) => n.instance_id),
        },
      )
    }),
  )

  app.get(
    '/signals',
    { schema: { hide: true } },
    page(ctx, async (_req, admin) => {
      const [rows, nodes] = await Promise.all([
        recentSignals(ctx.database.db, 200),
        listNodes(ctx.database.db, ['websignal', 'log_watcher']),
      ])
      return signalsPage(
        admin,
        rows,
        nodes.map((n) => n.instance_id),
      )
    }),
  )
  app.get(
    '/pairs',
    { schema: { hide: true } },
    page(ctx, async (_req, admin) => {
      const [pairs, nodes] = await Promise.all([listPairs(ctx.database.db), listNodes(ctx.database.db)])
      return pairsPage(admin, pairs, nodes)
    }),
  )

  app.get(
    '/smtp',
    { schema: { hide: true } },
    page(ctx, async (_req, admin) => smtpPage(admin, await currentReports(ctx.database.db))),
  )
  app.get(
    '/audit',
    { schema: { hide: true } },
    page(ctx, async (req, admin) => {
      const action = param(req, 'action')
      const actor = param(req, 'actor')
      const entries = await listAudit(ctx.database.db, {
        ...(action ? { action } : {}),
        ...(actor ? { actor } : {}),
        limit: 500,
      })
      return auditPage(admin, entries, { ...(action ? { action } : {}), ...(actor ? { actor } : {}) })
    }),
  )
  app.get('/dashboard.js', { schema: { hide: true } }, async (_req, reply) =>
    reply.type('text/javascript; charset=utf-8').header('cache-control', 'no-cache').send(DASHBOARD_JS),
  )
  app.get('/dashboard.css', { schema: { hide: true } }, async (_req, reply) =>
    reply.type('text/css; charset=utf-8').header('cache-control', 'no-cache').send(DASHBOARD_CSS),
  )
}
