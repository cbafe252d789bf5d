/**
 * A loopback HTTP server standing in for an action target: records every request and
 * answers as each path says (`/ok`, `/redirect`, `/slow`, `/huge`, `/fail`).
 */
import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface Received {
  path: string
  headers: IncomingMessage['headers']
  body: string
}

export interface CallbackServer {
  base: string
  port: number
  received: Received[]
  close(): Promise<void>
}

export async function startCallbackServer(): Promise<CallbackServer> {
  const received: Received[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const path = (req.url ?? '/').split('?')[0]!
      received.push({ path, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') })
      if (path.startsWith('/redirect')) {
        res.writeHead(302, { location: 'http://127.0.0.1:1/elsewhere' }).end()
      } else if (path.startsWith('/slow')) {
        // Never answers: the dispatcher's deadline must end the call.
      } else if (path.startsWith('/huge')) {
        res.writeHead(200, { 'content-type': 'text/plain' })
        res.end(Buffer.alloc(4 * 1024 * 1024, 0x61))
      } else if (path.startsWith('/fail')) {
        res.writeHead(500).end('broken')
      } else {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"text":"done"}')
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port
  return {
    base: `http://127.0.0.1:${port}`,
    port,
    received,
    async close() {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
