/**
 * The administrator dashboard, rendered on the server. Signing in exchanges an
 * administrator token for a session cookie (HttpOnly, Secure, SameSite=Strict); the page's
 * buttons call the JSON API, whose cookie-authenticated writes are origin-checked.
 */
import type { HttpApp } from '@gatehouse/kit'
import { resolvePrincipal } from '../auth/principal.ts'
import type { AppContext } from '../context.ts'
import { toDecision } from '../decisions/service.ts'
import { decisionsFor, listDecisions } from '../decisions/store.ts'
import { listNodes } from '../nodes/store.ts'
import { fromRow } from '../observations/merge.ts'
import { listFingerprints } from '../observations/store.ts'
import { currentReports } from '../smtp/service.ts'
import { DASHBOARD_CSS, DASHBOARD_JS } from './assets.ts'
import { overviewPage, signInPage } from './pages.ts'

const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

export function dashboardRoutes(app: HttpApp, ctx: AppContext) {
  app.get('/', { schema: { hide: true } }, async (req, reply) => {
    reply.header('content-security-policy', CSP).header('x-frame-options', 'DENY').header('cache-control', 'no-store')
    reply.type('text/html; charset=utf-8')
    let principal: Awaited<ReturnType<typeof resolvePrincipal>>
    try {
      principal = await resolvePrincipal(ctx.db, req)
    } catch {
      principal = undefined
    }
    if (principal?.type !== 'admin') return signInPage()
    const q = (req.query as Record<string, unknown>).instance
    const instance = typeof q === 'string' && q !== '' ? q : undefined
    const scope = instance === undefined ? {} : { instanceId: instance }
    const [nodes, rows, decisions, reports] = await Promise.all([
      listNodes(ctx.db),
      listFingerprints(ctx.db, { ...scope, limit: 200, offset: 0 }),
      listDecisions(ctx.db, { ...(instance === undefined ? {} : { scopeId: instance }), limit: 50, offset: 0 }),
      currentReports(ctx.db),
    ])
    const byPair = await decisionsFor(ctx.db, rows)
    const fingerprints = rows.map((row) => {
      const d = byPair.get(`${row.instance_id}/${row.fingerprint}`)
      return { instance_id: row.instance_id, aggregate: fromRow(row), decision: d ? toDecision(d) : undefined }
    })
    return overviewPage({
      admin: principal.name,
      instance,
      nodes,
      fingerprints,
      decisions: decisions.map(toDecision),
      reports,
    })
  })
  app.get('/dashboard.js', { schema: { hide: true } }, async (_req, reply) =>
    reply.type('text/javascript; charset=utf-8').header('cache-control', 'no-cache').send(DASHBOARD_JS),
  )
  app.get('/dashboard.css', { schema: { hide: true } }, async (_req, reply) =>
    reply.type('text/css; charset=utf-8').header('cache-control', 'no-cache').send(DASHBOARD_CSS),
  )
}
