/**
 * A Server-Sent Events client for tests: reads the stream over a real socket and hands out
 * events in order. `next()` waits for the next event (skipping keepalive comments), never
 * for a time. Each client has its own connection pool, destroyed by close(), so no idle
 * socket of a closed stream holds up the server's graceful close.
 */
import { Agent, fetch } from 'undici'

export interface StreamEvent {
  id: string
  event: string
  // biome-ignore lint/suspicious/noExplicitAny: event data is asserted field by field in the tests
  data: any
}

export class SseClient {
  readonly status: number
  readonly #events: StreamEvent[] = []
  #waiter: (() => void) | undefined
  #ended = false
  readonly #abort: AbortController
  readonly #agent: Agent
  /** The id of the last event taken with next(). */
  lastId = ''

  private constructor(status: number, abort: AbortController, agent: Agent) {
    this.status = status
    this.#abort = abort
    this.#agent = agent
  }

  static open(base: string, cookie: string, lastEventId?: string, path = '/api/v1/stream'): Promise<SseClient> {
    const headers: Record<string, string> = { cookie }
    if (lastEventId !== undefined) headers['last-event-id'] = lastEventId
    return SseClient.#connect(base + path, headers)
  }

  /** A stream as a script opens it: a reader API token, no cookie. */
  static openWithToken(base: string, token: string): Promise<SseClient> {
    return SseClient.#connect(`${base}/api/v1/stream`, { authorization: `Bearer ${token}` })
  }

  static async #connect(url: string, headers: Record<string, string>): Promise<SseClient> {
    const abort = new AbortController()
    const agent = new Agent()
    const res = await fetch(url, {
      headers: { ...headers, accept: 'text/event-stream' },
      signal: abort.signal,
      dispatcher: agent,
    })
    const client = new SseClient(res.status, abort, agent)
    if (res.status !== 200) {
      client.#ended = true
      return client
    }
    void client.#read(res.body as ReadableStream<Uint8Array>)
    return client
  }

  async #read(body: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder()
    let buf = ''
    try {
      for await (const chunk of body) {
        buf += decoder.decode(chunk, { stream: true })
        let end = buf.indexOf('\n\n')
        while (end >= 0) {
          this.#parse(buf.slice(0, end))
          buf = buf.slice(end + 2)
          end = buf.indexOf('\n\n')
        }
      }
    } catch {
      // aborted by close()
    }
    this.#ended = true
    this.#waiter?.()
  }

  #parse(block: string): void {
    const fields: Record<string, string> = {}
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) continue
      const i = line.indexOf(': ')
      if (i > 0) fields[line.slice(0, i)] = line.slice(i + 2)
    }
    if (fields.event === undefined) return
    this.#events.push({ id: fields.id ?? '', event: fields.event, data: JSON.parse(fields.data ?? 'null') })
    this.#waiter?.()
  }

  /** The next event; rejects if the stream ends first. */
  async next(): Promise<StreamEvent> {
    while (this.#events.length === 0) {
      if (this.#ended) throw new Error('the stream ended')
      await new Promise<void>((resolve) => {
        this.#waiter = resolve
      })
      this.#waiter = undefined
    }
    const e = this.#events.shift()!
    this.lastId = e.id
    return e
  }

  /** Skip to the next event of one of these types. */
  async nextOf(...types: string[]): Promise<StreamEvent> {
    for (;;) {
      const e = await this.next()
      if (types.includes(e.event)) return e
    }
  }

  /** True once the server ended the stream and every event was taken. */
  async ended(): Promise<boolean> {
    while (!this.#ended) await new Promise<void>((resolve) => (this.#waiter = resolve))
    return this.#events.length === 0
  }

  close(): void {
    this.#abort.abort()
    void this.#agent.destroy()
  }
}
