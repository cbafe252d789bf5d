/**
 * The one listener: GET /healthz and /readyz (the same readiness, as the spec says:
 * successful once the store is connected and every input has started) and GET /metrics.
 */
import { createHttpApp, type HttpApp, type Logger } from '@gatehouse/kit'
import type { Readiness } from '../agent.ts'
import type { Metrics } from '../metrics.ts'

export async function buildListener(logger: Logger, metrics: Metrics, readiness: () => Readiness): Promise<HttpApp> {
  const app = await createHttpApp({
    name: 'websignal',
    logger,
    metrics: metrics.registry,
    routes: { health: false, openapi: false },
    accessLog: false,
  })
  const ready = async (_req: unknown, reply: { code(n: number): { send(b: unknown): unknown } }) => {
    const r = readiness()
    const publishing = r.publishing ? { publishing: r.publishing } : {}
    if (!r.ready) {
      return reply.code(503).send({
        error: { code: 'not_ready', message: `not ready: ${Object.keys(r.failing).join(', ')}`, checks: r.failing },
        ...publishing,
      })
    }
    return { status: 'ready', ...publishing }
  }
  app.get('/healthz', { schema: { hide: true } }, ready)
  app.get('/readyz', { schema: { hide: true } }, ready)
  return app
}
