/** HA endpoints: GET /v1/status/ha (API and metrics listener), POST /v1/ha/promote, GET /v1/ha/events. */
import type { HttpApp } from '@gatehouse/kit'
import type { FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import { errors } from '../errors.ts'
import { actorOf } from '../zones/routes.ts'
import type { HaService } from './service.ts'
import { DemoteResult, HaEvent, HaStatusBody, PromoteBody, PromoteResult } from './status.ts'
import { listHaEvents } from './store.ts'

const StatusQuery = Type.Object(
  { include_peer: Type.Optional(Type.Boolean({ default: true })) },
  { additionalProperties: false },
)

function statusRoute(app: HttpApp, ha: HaService) {
  app.get<{ Querystring: { include_peer?: boolean } }>(
    '/v1/status/ha',
    {
      schema: {
        summary: 'HA role, write mode, VIP ownership, replication freshness, snapshot state, and the peer',
        tags: ['ha'],
        querystring: StatusQuery,
        response: { 200: HaStatusBody },
      },
    },
    async (req) => ha.status(req.query.include_peer !== false),
  )
}

/** The read-only metrics listener serves the status too, for the peer's checks. */
export function haMetricsRoutes(app: HttpApp, ha: HaService) {
  statusRoute(app, ha)
}

export function haRoutes(app: HttpApp, ha: HaService) {
  statusRoute(app, ha)
  app.post<{ Body: { reason?: string } | null }>(
    '/v1/ha/promote',
    {
      schema: {
        summary: 'promote this secondary to primary (refused while the old primary answers and is writable)',
        tags: ['ha'],
        body: PromoteBody,
        response: { 200: PromoteResult },
      },
    },
    async (req) => ha.promote({ requestId: req.id, actor: actorOf(req) }, req.body?.reason),
  )
  app.post<{ Body: { reason?: string } | null }>(
    '/v1/ha/demote',
    {
      schema: {
        summary: 'turn this (fenced) former primary into the secondary of the promoted peer',
        tags: ['ha'],
        body: PromoteBody,
        response: { 200: DemoteResult },
      },
    },
    async (req) => ha.demote({ requestId: req.id, actor: actorOf(req) }, req.body?.reason),
  )
  app.get<{ Querystring: { limit?: number } }>(
    '/v1/ha/events',
    {
      schema: {
        summary: 'promotions and refused promotions, newest first',
        tags: ['ha'],
        querystring: Type.Object(
          { limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })) },
          { additionalProperties: false },
        ),
        response: { 200: Type.Object({ events: Type.Array(HaEvent) }) },
      },
    },
    async (req) => {
      const rows = await listHaEvents(ha.deps.db, req.query.limit ?? 100)
      return {
        events: rows.map(({ id: _id, detail, epoch, ...r }) => ({
          ...r,
          epoch: Number(epoch),
          detail: JSON.parse(detail) as Record<string, unknown>,
        })),
      }
    },
  )
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])

/** Requests that change nothing although they are not GETs. */
function changesNothing(req: FastifyRequest): boolean {
  const route = req.routeOptions.url ?? ''
  if (route === '/v1/ha/promote' || route === '/v1/ha/demote') return true
  if (route.startsWith('/v1/providers/') && route.endsWith('/plans')) return true
  const body = req.body as { dry_run?: unknown } | null | undefined
  if (typeof body === 'object' && body !== null && body.dry_run === true) return true
  // A zone text body (text/dns) takes dry_run from the query string.
  return (req.query as { dry_run?: unknown } | undefined)?.dry_run === 'true' && typeof req.body === 'string'
}

/**
 * While this node is not the writable primary, every mutating /v1 request is refused with 423
 * and the reason: after body parsing (dry runs and plans still work) but before validation, so
 * a client on the wrong node learns that first.
 */
export function readOnlyGuard(app: HttpApp, ha: HaService) {
  app.addHook('preValidation', async (req) => {
    if (SAFE_METHODS.has(req.method) || !req.url.startsWith('/v1/') || changesNothing(req)) return
    const why = ha.readOnlyReason()
    if (why !== undefined) throw errors.read_only_secondary(why)
  })
}
