/**
 * Node pairings for the "same host" rule: a web signal node paired with a TLS gate has its
 * signals matched with that gate's sightings whatever their SNI (clients that send no SNI,
 * scanners that connect by address). GET/PUT/DELETE /api/web-pairs (administrators, audited).
 */
import { type HttpApp, INSTANCE_ID_PATTERN } from '@gatehouse/kit'
import { Type } from 'typebox'
import { audit } from '../admins/store.ts'
import { adminOf } from '../auth/guards.ts'
import type { AppContext } from '../context.ts'
import { errors } from '../errors.ts'
import { getNode } from '../nodes/store.ts'
import { formatMillis } from '../timestamps.ts'

const Params = Type.Object(
  {
    websignal_id: Type.String({ pattern: INSTANCE_ID_PATTERN }),
    tlsgate_id: Type.String({ pattern: INSTANCE_ID_PATTERN }),
  },
  { additionalProperties: false },
)

export function pairRoutes(app: HttpApp, ctx: AppContext) {
  app.get('/api/web-pairs', { onRequest: ctx.guards.requireAdmin }, async () => {
    const rows = await ctx.db
      .selectFrom('web_node_pairs')
      .selectAll()
      .orderBy('websignal_id')
      .orderBy('tlsgate_id')
      .execute()
    return {
      pairs: rows.map((r) => ({
        websignal_id: r.websignal_id,
        tlsgate_id: r.tlsgate_id,
        actor: r.actor,
        created_at: formatMillis(Number(r.created_ms)),
      })),
    }
  })

  app.put(
    '/api/web-pairs/:websignal_id/:tlsgate_id',
    { onRequest: ctx.guards.requireAdmin, schema: { params: Params } },
    async (req, reply) => {
      const { websignal_id, tlsgate_id } = req.params
      const web = await getNode(ctx.db, websignal_id)
      if (!web || (web.kind !== 'websignal' && web.kind !== 'log_watcher')) {
        throw errors.invalid_pair(`${websignal_id} is not a registered websignal node`)
      }
      const gate = await getNode(ctx.db, tlsgate_id)
      if (gate?.kind !== 'tlsgate') throw errors.invalid_pair(`${tlsgate_id} is not a registered tlsgate node`)
      const actor = `admin:${adminOf(req)}`
      await ctx.db.transaction().execute(async (trx) => {
        await trx
          .insertInto('web_node_pairs')
          .values({ websignal_id, tlsgate_id, actor, created_ms: Date.now() })
          .onConflict((oc) => oc.doNothing())
          .execute()
        await audit(trx, actor, 'web_pair.add', `${websignal_id}/${tlsgate_id}`)
      })
      return reply.code(204).send()
    },
  )

  app.delete(
    '/api/web-pairs/:websignal_id/:tlsgate_id',
    { onRequest: ctx.guards.requireAdmin, schema: { params: Params } },
    async (req, reply) => {
      const { websignal_id, tlsgate_id } = req.params
      const actor = `admin:${adminOf(req)}`
      await ctx.db.transaction().execute(async (trx) => {
        const r = await trx
          .deleteFrom('web_node_pairs')
          .where('websignal_id', '=', websignal_id)
          .where('tlsgate_id', '=', tlsgate_id)
          .executeTakeFirst()
        if (Number(r.numDeletedRows) === 0) throw errors.pair_not_found()
        await audit(trx, actor, 'web_pair.remove', `${websignal_id}/${tlsgate_id}`)
      })
      return reply.code(204).send()
    },
  )
}
