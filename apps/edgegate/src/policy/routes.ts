/** GET /v1/policy: a gate's decisions changed after `since`, and the cursor to send next. */
import { type HttpApp, PolicyResponse } from '@gatehouse/kit'
import { Type } from 'typebox'
import { nodeOf } from '../auth/guards.ts'
import type { AppContext } from '../context.ts'
import { toDecision } from '../decisions/service.ts'
import { decisionsSince } from '../decisions/store.ts'
import { errors } from '../errors.ts'
import { formatMicros, parseMicros } from '../timestamps.ts'

export function policyRoutes(app: HttpApp, ctx: AppContext) {
  const pulls = ctx.metrics.counter('policy_pulls_total', 'Policy responses served', ['kind'])
  app.get(
    '/v1/policy',
    {
      onRequest: ctx.guards.requireNode(['sshgate', 'tlsgate']),
      schema: {
        summary: 'Pull the decisions changed since a cursor (gate policy)',
        querystring: Type.Object(
          { instance_id: Type.String(), since: Type.Optional(Type.String()) },
          { additionalProperties: false },
        ),
        response: { 200: PolicyResponse },
      },
    },
    async (req) => {
      const node = nodeOf(req)
      let sinceUs = 0
      if (req.query.since !== undefined) {
        const parsed = parseMicros(req.query.since)
        if (parsed === undefined) throw errors.invalid_timestamp('since')
        sinceUs = parsed
      }
      const limit = ctx.settings.policyPageSize
      const rows = await decisionsSince(ctx.database.db, node.instance_id, sinceUs, limit + 1)
      const more = rows.length > limit
      const page = more ? rows.slice(0, limit) : rows
      const last = page.at(-1)
      pulls.inc({ kind: req.query.since === undefined ? 'full' : 'incremental' })
      const body: PolicyResponse = {
        cursor: formatMicros(last ? Number(last.updated_us) : sinceUs),
        decisions: page.map(toDecision),
        more,
      }
      if (ctx.trusted) body.trusted_ranges = ctx.trusted.current()
      return body
    },
  )
}
