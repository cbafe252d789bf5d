/**
 * The ingestion baseline: kit's createHttpApp (same Fastify setup, logging, metrics and
 * error handling as notify) with one trivial JSON route and no storage.
 */
import { createHttpApp, createLogger } from '@gatehouse/kit'

const port = Number(process.argv[2])
const app = await createHttpApp({ name: 'baseline', logger: createLogger({ name: 'baseline', level: 'info' }) })
app.post('/hooks/:token', async () => ({ ok: true }))
await app.listen({ host: '127.0.0.1', port })
process.on('SIGTERM', () => app.close().then(() => process.exit(0)))
