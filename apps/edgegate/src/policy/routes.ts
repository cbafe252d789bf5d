/** GET /v1/policy: a gate's decisions changed after `since`, and the cursor to send next. */
import { type HttpApp, PolicyResponse } from '@gatehouse/kit'
import { Type } from 'typebox'
import { nodeOf } from '../auth/guards.ts'
import type { AppContext } from '../context.ts'
import { toDecision } from '../decisions/service.ts'
import { decisionsSince, readDecisionClock } from '../decisions/store.ts'
import { errors } from '../errors.ts'
import { formatMicros, parseMicros } from '../timestamps.ts'

export function policyRoutes(app: HttpApp, ctx: AppContext) {
  const pulls = ctx.metrics.counter('policy_pulls_total', 'Policy responses served', ['kind'])
  const cursorAhead = cursorAheadCheck(ctx)
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
      await cursorAhead(node.instance_id, sinceUs)
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

/**
 * A gate's cursor past every decision time this database has issued: the database was restored
 * from a backup, or failed over to a replica that had not caught up. Decisions made after that
 * point reached the gate but are not here, and nothing would say so: the gate keeps enforcing
 * them, while the dashboard shows none. New decisions still reach the gate (their times come
 * from the wall clock, past its cursor). The newest time is cached and read again only when a
 * cursor passes it, so a pull costs no extra query.
 */
function cursorAheadCheck(ctx: AppContext): (instanceId: string, sinceUs: number) => Promise<void> {
  const ahead = ctx.metrics.counter(
    'policy_cursor_ahead_total',
    'Policy pulls whose cursor is past every decision in the database (restored or failed over to an older copy)',
  )
  const warned = new Map<string, number>()
  let newestUs = 0
  return async (instanceId, sinceUs) => {
    if (sinceUs <= newestUs) return
    newestUs = await readDecisionClock(ctx.database.db)
    if (sinceUs <= newestUs) return
    ahead.inc()
    const now = Date.now()
    if (now - (warned.get(instanceId) ?? 0) < 10 * 60_000) return
    if (warned.size >= 10_000) warned.clear()
    warned.set(instanceId, now)
    ctx.logger.warn(
      { instance_id: instanceId, cursor: formatMicros(sinceUs), newest_decision: formatMicros(newestUs) },
      `node ${instanceId} has decisions up to ${formatMicros(sinceUs)}, later than any in this database (${formatMicros(newestUs)}): the database was restored from a backup or failed over to a copy that had not caught up. Decisions made after that are still enforced by the gate but unknown here; compare the gate's list with edgegate decision list --instance ${instanceId}`,
    )
  }
}
