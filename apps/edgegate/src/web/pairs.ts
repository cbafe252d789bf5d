/**
 * Node pairings for the "same host" rule: a web signal node paired with a TLS gate has its
 * signals matched with that gate's sightings whatever their SNI (clients that send no SNI,
 * scanners that connect by address). GET/PUT/DELETE /api/web-pairs (administrators, audited).
 */
import { type HttpApp, INSTANCE_ID_PATTERN } from '@gatehouse/kit'
import { Type } from 'typebox'
import { adminOf } from '../auth/guards.ts'
import type { AppContext } from '../context.ts'
import { addPair, listPairs, removePair } from './pair-store.ts'

const Params = Type.Object(
  {
    websignal_id: Type.String({ pattern: INSTANCE_ID_PATTERN }),
    tlsgate_id: Type.String({ pattern: INSTANCE_ID_PATTERN }),
  },
  { additionalProperties: false },
)

export function pairRoutes(app: HttpApp, ctx: AppContext) {
  app.get(
    '/api/web-pairs',
    { onRequest: ctx.guards.requireAdmin, schema: { summary: 'List websignal/TLS gate node pairings' } },
    async () => ({ pairs: await listPairs(ctx.database.db) }),
  )

  app.put(
    '/api/web-pairs/:websignal_id/:tlsgate_id',
    {
      onRequest: ctx.guards.requireAdmin,
      schema: { summary: 'Pair a websignal node with a TLS gate', params: Params },
    },
    async (req, reply) => {
      await addPair(
        ctx.database.db,
        ctx.database.kind,
        req.params.websignal_id,
        req.params.tlsgate_id,
        `admin:${adminOf(req)}`,
      )
      return reply.code(204).send()
    },
  )

  app.delete(
    '/api/web-pairs/:websignal_id/:tlsgate_id',
    { onRequest: ctx.guards.requireAdmin, schema: { summary: 'Remove a websignal/TLS gate pairing', params: Params } },
    async (req, reply) => {
      await removePair(
        ctx.database.db,
        ctx.database.kind,
        req.params.websignal_id,
        req.params.tlsgate_id,
        `admin:${adminOf(req)}`,
      )
      return reply.code(204).send()
    },
  )
}
