/**
 * The HTTP factory's JSON route (createHttpApp, access log off and on) against a bare
 * node:http handler answering the same JSON, both on loopback, driven by `load.ts` in a
 * child process.
 */
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { resolve } from 'node:path'
import pino from 'pino'
import { Type } from 'typebox'
import { createHttpApp, createLogger } from '../src/index.ts'
import type { Figure } from './measure.ts'

const PAYLOAD = { status: 'ok', service: 'bench', items: [1, 2, 3], version: '1.0.0' }
const Payload = Type.Object(
  {
    status: Type.String(),
    service: Type.String(),
    items: Type.Array(Type.Integer()),
    version: Type.String(),
  },
  { additionalProperties: false },
)

export interface LoadOptions {
  connections: number
  warmupMs: number
  durationMs: number
}

async function load(url: string, name: string, o: LoadOptions): Promise<Figure & { errors: number }> {
  const child = spawn(
    process.execPath,
    [resolve(import.meta.dirname, 'load.ts'), url, String(o.connections), String(o.warmupMs), String(o.durationMs)],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  )
  let out = ''
  child.stdout.on('data', (c: Buffer) => {
    out += c.toString()
  })
  const [code] = (await once(child, 'close')) as [number | null]
  if (code !== 0) throw new Error(`load generator exited with ${code}`)
  const r = JSON.parse(out) as { requests: number; errors: number; seconds: number }
  return { name, ops: r.requests, opsPerSec: r.requests / r.seconds, errors: r.errors }
}

async function bare(o: LoadOptions) {
  const body = JSON.stringify(PAYLOAD)
  const server = createServer((req, res) => {
    if (req.url === '/v1/status' && req.method === 'GET') {
      res.writeHead(200, {
        'content-type': 'application/json; charset=utf-8',
        'content-length': Buffer.byteLength(body),
      })
      res.end(body)
    } else {
      res.writeHead(404)
      res.end()
    }
  })
  server.keepAliveTimeout = 30_000
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  try {
    return await load(`http://127.0.0.1:${port}/v1/status`, 'bare node:http', o)
  } finally {
    server.closeAllConnections()
    server.close()
  }
}

async function kit(accessLog: boolean, o: LoadOptions) {
  // Log lines go through pino's own asynchronous writer (as on stdout in production) into /dev/null.
  const destination = pino.destination({ dest: '/dev/null', sync: false })
  const logger = createLogger({ name: 'bench', destination: destination as unknown as NodeJS.WritableStream })
  const app = await createHttpApp({ name: 'bench', logger, accessLog })
  app.get('/v1/status', { schema: { response: { 200: Payload } } }, async () => PAYLOAD)
  const base = await app.listen({ port: 0, host: '127.0.0.1' })
  app.server.keepAliveTimeout = 30_000
  try {
    return await load(`${base}/v1/status`, `createHttpApp, access log ${accessLog ? 'on' : 'off'}`, o)
  } finally {
    await app.close()
    destination.flushSync()
    destination.end()
  }
}

export async function benchHttp(o: LoadOptions) {
  // Interleave baseline and kit so drift on the machine affects both.
  const baseline = await bare(o)
  const off = await kit(false, o)
  const on = await kit(true, o)
  return { baseline, off, on }
}
