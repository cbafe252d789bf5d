/** GET /api/audit: the audit log for administrators, newest first, with the CLI's filters. */
import type { HttpApp } from '@gatehouse/kit'
import { Type } from 'typebox'
import type { AppContext } from '../context.ts'
import { errors } from '../errors.ts'
import { formatMillis, parseMillis } from '../timestamps.ts'
import { listAudit } from './store.ts'

export function auditRoutes(app: HttpApp, ctx: AppContext) {
  app.get(
    '/api/audit',
    {
      onRequest: ctx.guards.requireAdmin,
      schema: {
        summary: 'List audit entries, newest first',
        querystring: Type.Object(
          {
            since: Type.Optional(Type.String()),
            actor: Type.Optional(Type.String({ maxLength: 200 })),
            action: Type.Optional(Type.String({ maxLength: 200 })),
            target: Type.Optional(Type.String({ maxLength: 400 })),
            limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100 }),
          },
          { additionalProperties: false },
        ),
      },
    },
    async (req) => {
      const q = req.query
      let sinceMs: number | undefined
      if (q.since !== undefined) {
        sinceMs = parseMillis(q.since)
        if (sinceMs === undefined) throw errors.invalid_timestamp('since')
      }
      const rows = await listAudit(ctx.database.db, {
        ...(sinceMs !== undefined ? { sinceMs } : {}),
        ...(q.actor !== undefined ? { actor: q.actor } : {}),
        ...(q.action !== undefined ? { action: q.action } : {}),
        ...(q.target !== undefined ? { target: q.target } : {}),
        limit: q.limit,
      })
      return {
        entries: rows.map((r) => ({
          at: formatMillis(Number(r.at_ms)),
          actor: r.actor,
          action: r.action,
          target: r.target,
        })),
      }
    },
  )
}
