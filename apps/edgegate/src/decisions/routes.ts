/** Decision administration: /api/decisions (administrators). */
import { Decision, FINGERPRINT_PATTERN, type HttpApp, INSTANCE_ID_PATTERN, Verdict } from '@gatehouse/kit'
import { Type } from 'typebox'
import { adminOf } from '../auth/guards.ts'
import type { AppContext } from '../context.ts'
import { errors } from '../errors.ts'
import { getNode } from '../nodes/store.ts'
import { changeDecision, parseExpiry, removeDecision, toDecision } from './service.ts'
import { getDecision, listDecisions } from './store.ts'

const Params = Type.Object(
  {
    instance_id: Type.String({ pattern: INSTANCE_ID_PATTERN }),
    fingerprint: Type.String({ pattern: FINGERPRINT_PATTERN }),
  },
  { additionalProperties: false },
)

const Change = Type.Object(
  {
    status: Type.Optional(Verdict),
    label: Type.Optional(Type.String({ maxLength: 256 })),
    expires_in: Type.Optional(
      Type.String({
        maxLength: 32,
        description: 'the decision ends this long from now, e.g. 4h (1m to 8760h); then it is deleted',
      }),
    ),
  },
  { additionalProperties: false },
)

export function decisionRoutes(app: HttpApp, ctx: AppContext) {
  app.get(
    '/api/decisions',
    {
      onRequest: ctx.guards.requireAdmin,
      schema: {
        summary: 'List decisions',
        querystring: Type.Object(
          {
            instance_id: Type.Optional(Type.String()),
            status: Type.Optional(Verdict),
            source: Type.Optional(Type.String({ maxLength: 64 })),
            limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100 }),
            offset: Type.Integer({ minimum: 0, default: 0 }),
          },
          { additionalProperties: false },
        ),
        response: { 200: Type.Object({ decisions: Type.Array(Decision) }) },
      },
    },
    async (req) => {
      if (req.query.instance_id !== undefined && !(await getNode(ctx.database.db, req.query.instance_id)))
        throw errors.node_not_found(req.query.instance_id)
      const rows = await listDecisions(ctx.database.db, {
        ...(req.query.instance_id !== undefined ? { scopeId: req.query.instance_id } : {}),
        ...(req.query.status !== undefined ? { status: req.query.status } : {}),
        ...(req.query.source !== undefined ? { source: req.query.source } : {}),
        limit: req.query.limit,
        offset: req.query.offset,
      })
      return { decisions: rows.map(toDecision) }
    },
  )

  app.get(
    '/api/decisions/:instance_id/:fingerprint',
    {
      onRequest: ctx.guards.requireAdmin,
      schema: { summary: 'Get the decision on a fingerprint', params: Params, response: { 200: Decision } },
    },
    async (req) => {
      const { instance_id: id, fingerprint } = req.params
      // Stored as the gate computes it (lower case), as PUT and DELETE look it up; else as written.
      const row =
        (await getDecision(ctx.database.db, id, fingerprint.toLowerCase())) ??
        (await getDecision(ctx.database.db, id, fingerprint))
      if (!row) throw errors.decision_not_found(id, fingerprint)
      return toDecision(row)
    },
  )

  app.put(
    '/api/decisions/:instance_id/:fingerprint',
    {
      onRequest: ctx.guards.requireAdmin,
      schema: {
        summary: "Approve or block a fingerprint (set a decision's status or label)",
        params: Params,
        body: Change,
        response: { 200: Decision },
      },
    },
    async (req) =>
      changeDecision(ctx.database.db, ctx.database.kind, {
        instanceId: req.params.instance_id,
        fingerprint: req.params.fingerprint,
        ...(req.body.status !== undefined ? { status: req.body.status } : {}),
        ...(req.body.label !== undefined ? { label: req.body.label } : {}),
        ...(req.body.expires_in !== undefined ? { expiresInMs: parseExpiry(req.body.expires_in) } : {}),
        actor: `admin:${adminOf(req)}`,
      }),
  )

  app.delete(
    '/api/decisions/:instance_id/:fingerprint',
    { onRequest: ctx.guards.requireAdmin, schema: { summary: 'Remove a decision', params: Params } },
    async (req, reply) => {
      await removeDecision(
        ctx.database.db,
        ctx.database.kind,
        req.params.instance_id,
        req.params.fingerprint,
        `admin:${adminOf(req)}`,
      )
      return reply.code(204).send()
    },
  )
}
