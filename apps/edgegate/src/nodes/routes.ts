/** GET /api/nodes: the registry as administrators see it (never a credential). */
import type { HttpApp } from '@gatehouse/kit'
import type { AppContext } from '../context.ts'
import { describeNode } from './service.ts'
import { listNodes } from './store.ts'

export function nodeRoutes(app: HttpApp, ctx: AppContext) {
  app.get(
    '/api/nodes',
    { onRequest: ctx.guards.requireAdmin, schema: { summary: 'List registered nodes' } },
    async () => ({
      nodes: (await listNodes(ctx.database.db)).map(describeNode),
    }),
  )
}
