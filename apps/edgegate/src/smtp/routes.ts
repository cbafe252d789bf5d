/** POST /v1/smtp/reports (active tlsgate nodes) and GET /api/smtp-reports (administrators). */
import { type HttpApp, SmtpReport, SmtpReportResult } from '@gatehouse/kit'
import { Type } from 'typebox'
import { nodeOf } from '../auth/guards.ts'
import type { AppContext } from '../context.ts'
import { errors } from '../errors.ts'
import { ClockCheck, clockAheadReporter } from '../nodes/clock-ahead.ts'
import { acceptReport, currentReports } from './service.ts'

export function smtpRoutes(app: HttpApp, ctx: AppContext) {
  const reports = ctx.metrics.counter('smtp_reports_total', 'SMTP correlation reports received', ['result'])
  const reportClock = clockAheadReporter(ctx.metrics, ctx.logger, 'SMTP reports')
  app.post(
    '/v1/smtp/reports',
    {
      onRequest: ctx.guards.requireNode(['tlsgate']),
      schema: {
        summary: 'Report an SMTP correlation from a TLS gate',
        querystring: Type.Object({ instance_id: Type.String() }, { additionalProperties: false }),
        body: SmtpReport,
        response: { 200: SmtpReportResult, 201: SmtpReportResult },
      },
    },
    async (req, reply) => {
      const node = nodeOf(req)
      if (req.body.instance_id !== req.query.instance_id) throw errors.instance_id_mismatch()
      try {
        const clock = new ClockCheck(Date.now())
        const result = await acceptReport(ctx.database.db, ctx.database.kind, node.instance_id, req.body, clock)
        reports.inc({ result })
        reportClock(node.instance_id, clock)
        return reply.code(result === 'stored' ? 201 : 200).send({ result })
      } catch (err) {
        reports.inc({ result: 'refused' })
        throw err
      }
    },
  )

  app.get(
    '/api/smtp-reports',
    { onRequest: ctx.guards.requireAdmin, schema: { summary: 'List the current SMTP correlation reports' } },
    async () => ({
      reports: await currentReports(ctx.database.db),
    }),
  )
}
