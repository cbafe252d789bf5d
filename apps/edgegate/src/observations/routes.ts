/** POST /v1/observations/batch (gates) and GET /api/fingerprints (administrators). */
import { type HttpApp, ObservationBatch, ObservationBatchResult } from '@gatehouse/kit'
import { Type } from 'typebox'
import { nodeOf } from '../auth/guards.ts'
import type { AppContext } from '../context.ts'
import { toDecision } from '../decisions/service.ts'
import { decisionsFor } from '../decisions/store.ts'
import { errors } from '../errors.ts'
import { ClockCheck, clockAheadReporter } from '../nodes/clock-ahead.ts'
import { formatMillis } from '../timestamps.ts'
import { fromRow, normalizeObservation } from './merge.ts'
import { MergeQueue } from './merge-queue.ts'
import { listFingerprints } from './store.ts'

const InstanceQuery = Type.Object({ instance_id: Type.String() }, { additionalProperties: false })

export function observationRoutes(app: HttpApp, ctx: AppContext) {
  const observed = ctx.metrics.counter('observations_total', 'Observations merged from gate nodes')
  const queue = new MergeQueue(ctx.database, ctx.metrics)
  const reportClock = clockAheadReporter(ctx.metrics, ctx.logger, 'observations')

  app.post(
    '/v1/observations/batch',
    {
      onRequest: ctx.guards.requireNode(['sshgate', 'tlsgate']),
      bodyLimit: 4 * 1024 * 1024,
      schema: {
        summary: 'Merge a batch of fingerprint observations from a gate',
        querystring: InstanceQuery,
        body: ObservationBatch,
        response: { 200: ObservationBatchResult },
      },
    },
    async (req) => {
      const node = nodeOf(req)
      if (req.body.instance_id !== req.query.instance_id) throw errors.instance_id_mismatch()
      const now = Date.now()
      const cutoff = now - ctx.settings.sightingRetentionMs
      const clock = new ClockCheck(now)
      const aggregates = req.body.observations.map((o, i) => normalizeObservation(o, i, cutoff, clock))
      reportClock(node.instance_id, clock)
      // TLS gates' sightings also feed the web candidate report (with their host): the merge
      // records the ones not yet in the stored lists, in its own transaction.
      await queue.merge(node.instance_id, aggregates, cutoff, now, node.kind === 'tlsgate')
      observed.inc(aggregates.length)
      return { accepted: aggregates.length }
    },
  )

  app.get(
    '/api/fingerprints',
    {
      onRequest: ctx.guards.requireAdmin,
      schema: {
        summary: 'List observed fingerprints with their decisions',
        querystring: Type.Object(
          {
            instance_id: Type.Optional(Type.String()),
            limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100 }),
            offset: Type.Integer({ minimum: 0, default: 0 }),
          },
          { additionalProperties: false },
        ),
      },
    },
    async (req) => {
      const rows = await listFingerprints(ctx.database.db, {
        ...(req.query.instance_id !== undefined ? { instanceId: req.query.instance_id } : {}),
        limit: req.query.limit,
        offset: req.query.offset,
      })
      const decisions = await decisionsFor(ctx.database.db, rows)
      const fingerprints = rows.map((row) => {
        const a = fromRow(row)
        const decision = decisions.get(`${row.instance_id}/${row.fingerprint}`)
        return {
          instance_id: row.instance_id,
          fingerprint: a.fingerprint,
          reported_status: a.reported_status,
          first_seen: formatMillis(a.first_seen_ms),
          last_seen: formatMillis(a.last_seen_ms),
          count: a.count,
          ips: a.ips,
          ports: a.ports,
          sightings: a.sightings.map((s) => ({ ip: s.ip, port: s.port, last_seen: formatMillis(s.last_seen_ms) })),
          metadata: a.metadata,
          decision: decision ? toDecision(decision) : null,
        }
      })
      return { fingerprints }
    },
  )
}
