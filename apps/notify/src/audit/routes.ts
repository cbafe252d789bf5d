/**
 * GET /api/v1/admin/audit?limit=&before=  administrators read the audit log, newest first;
 * `next_before` pages to older entries.
 */
import type { HttpApp } from '@gatehouse/kit'
import { Type } from 'typebox'
import type { Context } from '../context.ts'
import { listAudit } from './store.ts'

const Query = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200 })),
    before: Type.Optional(Type.Integer({ minimum: 1 })),
  },
  { additionalProperties: false },
)

export function auditRoutes(app: HttpApp, ctx: Context) {
  app.get(
    '/api/v1/admin/audit',
    {
      onRequest: ctx.guard.admin,
      schema: { summary: 'Read the audit log, newest first (administrator)', tags: ['audit'], querystring: Query },
    },
    async (req) => {
      const limit = req.query.limit ?? 50
      const entries = await listAudit(ctx.database.db, limit, req.query.before)
      return { entries, next_before: entries.length === limit ? entries[entries.length - 1]!.id : null }
    },
  )
}
