/** GET /v1/metrics/history?range=1h|6h|24h|7d */
import type { HttpApp } from '@gatehouse/kit'
import { Type } from 'typebox'
import { type HistoryService, RANGES, type Range } from './service.ts'

const Query = Type.Object(
  { range: Type.Union(Object.keys(RANGES).map((r) => Type.Literal(r))) },
  { additionalProperties: false },
)

export function historyRoutes(app: HttpApp, service: HistoryService) {
  app.get(
    '/v1/metrics/history',
    { schema: { summary: 'Get DNS metrics history for a range', tags: ['metrics'], querystring: Query } },
    async (req) => service.history((req.query as { range: Range }).range),
  )
}
