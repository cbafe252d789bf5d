/**
 * The console's own listener: a second HTTP server in the same process that hands every request
 * to the same Fastify router as the API listener, so console pages call exactly the API's routes
 * (and its validation, revisions and publication pipeline). The guard (guard.ts) tells the two
 * listeners apart by the request object this server saw, and asks a session of every request here.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { HttpApp } from '@gatehouse/kit'

export class ConsoleListener {
  readonly #app: HttpApp
  readonly #server: Server
  readonly #requests = new WeakSet<IncomingMessage>()
  #base: string | undefined

  constructor(app: HttpApp) {
    this.#app = app
    this.#server = createServer((req, res) => {
      this.#requests.add(req)
      this.#app.routing(req, res)
    })
  }

  /** Whether a request arrived on the console listener (not the API's). */
  owns(req: IncomingMessage): boolean {
    return this.#requests.has(req)
  }

  /** `http://host:port` once listening, else undefined. */
  get base(): string | undefined {
    return this.#base
  }

  async listen(host: string, port: number): Promise<string> {
    await this.#app.ready()
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', reject)
      this.#server.listen(port, host, () => {
        this.#server.off('error', reject)
        resolve()
      })
    })
    const a = this.#server.address() as AddressInfo
    this.#base = `http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`
    return this.#base
  }

  async close(): Promise<void> {
    if (!this.#server.listening) return
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()))
    // Browsers keep connections open; the console has no long-running requests to drain.
    this.#server.closeIdleConnections()
    setTimeout(() => this.#server.closeAllConnections(), 2000).unref()
    await closed
    this.#base = undefined
  }
}
