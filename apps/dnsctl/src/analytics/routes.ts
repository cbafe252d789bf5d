/** GET /v1/query-analytics?range=1h|6h|24h|7d&limit=1..100&recent=0..1000 */
import type { HttpApp } from '@gatehouse/kit'
import { Type } from 'typebox'
import { type AnalyticsRange, type AnalyticsService, RANGES } from './service.ts'

const Query = Type.Object(
  {
    range: Type.Union(Object.keys(RANGES).map((r) => Type.Literal(r))),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 10 })),
    recent: Type.Optional(Type.Integer({ minimum: 0, maximum: 1000, default: 0 })),
  },
  { additionalProperties: false },
)

export function analyticsRoutes(app: HttpApp, service: AnalyticsService) {
  app.get(
    '/v1/query-analytics',
    {
      schema: {
        summary: 'Get query analytics for a range (top names, recent queries)',
        tags: ['metrics'],
        querystring: Query,
      },
    },
    async (req) => {
      const q = req.query as { range: AnalyticsRange; limit?: number; recent?: number }
      return service.snapshot(q.range, q.limit ?? 10, q.recent ?? 0)
    },
  )
}
