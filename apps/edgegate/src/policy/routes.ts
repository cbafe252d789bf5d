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
      if (sinceUs > cursorAhead.newestUs || Date.now() > cursorAhead.staleAt) {
        await cursorAhead.check(node.instance_id, sinceUs)
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

/**
 * A gate's cursor past every decision time this database has issued: the database was restored
 * from a backup, or failed over to a replica that had not caught up. Decisions made after that
 * point reached the gate but are not here, and nothing would say so: the gate keeps enforcing
 * them, while the dashboard shows none. New decisions still reach the gate (their times come
 * from the wall clock, past its cursor). The newest time is cached, read again when a cursor
 * passes it and at most once a minute otherwise, so a pull costs no extra query.
 */
function cursorAheadCheck(ctx: AppContext) {
  const ahead = ctx.metrics.counter(
    'policy_cursor_ahead_total',
    'Policy pulls whose cursor is past every decision in the database (restored or failed over to an older copy)',
  )
  const warned = new Map<string, number>()
  const state = {
    /** The newest decision time read from the database; a cursor at or below it needs no check. */
    newestUs: 0,
    /** Read again after a minute anyway: a failover to an older copy lowers it under a running process. */
    staleAt: 0,
    async check(instanceId: string, sinceUs: number): Promise<void> {
      state.newestUs = await readDecisionClock(ctx.database.db)
      state.staleAt = Date.now() + 60_000
      if (sinceUs <= state.newestUs) return
      ahead.inc()
      const now = Date.now()
      if (now - (warned.get(instanceId) ?? 0) < 10 * 60_000) return
      if (warned.size >= 10_000) warned.clear()
      warned.set(instanceId, now)
      const message = `node ${instanceId} has decisions up to ${formatMicros(sinceUs)}, later than any in this database (${formatMicros(state.newestUs)}): the database was restored from a backup or failed over to a copy that had not caught up. Decisions made after that are still enforced by the gate but unknown here; compare the gate's list with edgegate decision list --instance ${instanceId}`
      ctx.logger.warn(
        { instance_id: instanceId, cursor: formatMicros(sinceUs), newest_decision: formatMicros(state.newestUs) },
        message,
      )
      ctx.alert({
        title: `the database is behind node ${instanceId}`,
        message,
        priority: 'high',
        tags: ['database-behind'],
      })
    },
  }
  return state
}
