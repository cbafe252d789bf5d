/**
 * POST /v1/signals/batch (websignal and legacy log_watcher nodes). The schema is strict:
 * there is no field for a raw request target or a user agent, so a batch carrying one is
 * refused whole (400) and nothing is stored. Idempotent by (node, event_id). A batch from a
 * fenced-off publisher (epoch below the highest seen for the node) is refused with 409.
 */
import { type HttpApp, normalizeIp, SignalBatch, SignalBatchResult } from '@gatehouse/kit'
import { Type } from 'typebox'
import { nodeOf } from '../auth/guards.ts'
import type { AppContext } from '../context.ts'
import type { SignalTable } from '../db/schema.ts'
import { errors } from '../errors.ts'
import { ClockCheck, clockAheadReporter } from '../nodes/clock-ahead.ts'
import { formatMillis, parseMillis } from '../timestamps.ts'
import { normalizeHost } from '../web/sightings.ts'
import { checkPublisherEpoch } from './epoch.ts'
import { recentSignals, recordSignals } from './store.ts'

export function signalRoutes(app: HttpApp, ctx: AppContext) {
  const received = ctx.metrics.counter('signals_total', 'Web signals received', ['result'])
  const reportClock = clockAheadReporter(ctx.metrics, ctx.logger, 'signals')

  app.post(
    '/v1/signals/batch',
    {
      onRequest: ctx.guards.requireNode(['websignal', 'log_watcher']),
      schema: {
        summary: 'Record a batch of web signals from a websignal node',
        querystring: Type.Object({ instance_id: Type.String() }, { additionalProperties: false }),
        body: SignalBatch,
        response: { 200: SignalBatchResult },
      },
    },
    async (req) => {
      const node = nodeOf(req)
      if (req.body.instance_id !== req.query.instance_id) throw errors.instance_id_mismatch()
      const now = Date.now()
      const clock = new ClockCheck(now)
      const rows: Array<Omit<SignalTable, 'network'>> = req.body.signals.map((s, i) => {
        const sent = parseMillis(s.observed_at)
        if (sent === undefined) throw errors.invalid_timestamp(`signals[${i}].observed_at`)
        const observed = clock.date(sent)
        let ip: string
        try {
          ip = normalizeIp(s.ip)
        } catch {
          throw errors.invalid_ip(`signals[${i}].ip`)
        }
        return {
          instance_id: node.instance_id,
          event_id: s.event_id,
          observed_ms: observed,
          host: normalizeHost(s.host),
          site: s.site,
          ip,
          trigger: s.trigger,
          connections: s.connections,
          errors: s.errors,
          successes: s.successes,
          window_seconds: s.window_seconds,
          received_ms: now,
        }
      })
      await checkPublisherEpoch(ctx.database.db, node.instance_id, req.body.epoch, now)
      reportClock(node.instance_id, clock)
      const accepted = await recordSignals(ctx.database.db, ctx.database.kind, node.instance_id, rows)
      received.inc({ result: 'accepted' }, accepted)
      received.inc({ result: 'duplicate' }, rows.length - accepted)
      return { accepted, duplicates: rows.length - accepted }
    },
  )

  app.get(
    '/api/signals',
    {
      onRequest: ctx.guards.requireAdmin,
      schema: {
        summary: 'List the latest web signals',
        querystring: Type.Object(
          { limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100 }) },
          { additionalProperties: false },
        ),
      },
    },
    async (req) => {
      const rows = await recentSignals(ctx.database.db, req.query.limit)
      return {
        signals: rows.map(({ observed_ms, received_ms, ...s }) => ({
          ...s,
          observed_at: formatMillis(Number(observed_ms)),
          received_at: formatMillis(Number(received_ms)),
        })),
      }
    },
  )
}
