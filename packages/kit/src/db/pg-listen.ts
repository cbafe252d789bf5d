/**
 * A PostgreSQL LISTEN session that stays up: one connection of its own (outside the pool),
 * reopened every `retryMs` after it is lost, and checked by a heartbeat so a server gone
 * silent (a host down, a dropped NAT entry) is noticed in seconds, not after TCP
 * keep-alive's minutes. A NOTIFY sent while the session is down is lost for good, so a
 * service catches up in `onUp` (notify runs a pass; artsvc starts its liveness cache empty).
 */
import type pg from 'pg'
import type { Logger } from '../logger.ts'

export interface ListenHandlers {
  /** A NOTIFY on the channel, with its payload ('' when it has none). */
  onNotify(payload: string): void
  /** Listening: once at first and again after every reconnect. */
  onUp?(): void
  /** No longer listening, once per outage: the session was lost or its first attempt failed. */
  onDown?(err: Error): void
  /** Where the outage and the recovery are logged (warn, info). */
  logger?: Logger
  /** The pause between attempts to reconnect, in ms (default 1 s). */
  retryMs?: number
  /** How often the session is checked, and how long its answer may take, in ms (default 10 s). */
  heartbeatMs?: number
}

export interface ListenSession {
  /** Whether LISTEN is in effect now. */
  readonly listening: boolean
  /** End the session; no more handlers are called. */
  close(): Promise<void>
}

// An identifier LISTEN takes without quoting; the channel is spliced into the statement.
const CHANNEL = /^[a-z_][a-z0-9_]{0,62}$/

/**
 * LISTEN on `channel` over connections from `connect`. Resolves after the first attempt,
 * whether or not it succeeded (`listening` tells): a database that is down at start-up is
 * retried in the background like one lost later.
 */
export async function listenOn(
  connect: () => Promise<pg.Client>,
  channel: string,
  handlers: ListenHandlers,
): Promise<ListenSession> {
  if (!CHANNEL.test(channel))
    throw new TypeError(`not a channel name LISTEN takes unquoted: ${JSON.stringify(channel)}`)
  const session = new Listener(connect, channel, handlers)
  await session.attempt()
  return session
}

class Listener implements ListenSession {
  readonly #connect: () => Promise<pg.Client>
  readonly #channel: string
  readonly #handlers: ListenHandlers
  readonly #retryMs: number
  readonly #heartbeatMs: number
  #client: pg.Client | undefined
  #listening = false
  #closed = false
  #retry: NodeJS.Timeout | undefined
  #heartbeat: NodeJS.Timeout | undefined
  /** When the current outage began (ms since the epoch); undefined while listening or before the first attempt. */
  #downSince: number | undefined

  constructor(connect: () => Promise<pg.Client>, channel: string, handlers: ListenHandlers) {
    this.#connect = connect
    this.#channel = channel
    this.#handlers = handlers
    this.#retryMs = handlers.retryMs ?? 1000
    this.#heartbeatMs = handlers.heartbeatMs ?? 10_000
  }

  get listening(): boolean {
    return this.#listening
  }

  async attempt(): Promise<void> {
    let client: pg.Client
    try {
      client = await this.#connect()
    } catch (err) {
      this.#down(err)
      return
    }
    // Closed while connecting (a reconnect racing shutdown): the connection is not kept.
    if (this.#closed) {
      await client.end().catch(() => undefined)
      return
    }
    this.#client = client
    client.on('notification', (message) => {
      if (this.#client !== client || message.channel !== this.#channel) return
      this.#call(() => this.#handlers.onNotify(message.payload ?? ''))
    })
    client.on('error', (err) => this.#lost(client, err))
    client.on('end', () => this.#lost(client, new Error('the LISTEN connection ended')))
    try {
      await client.query(`LISTEN ${this.#channel}`)
    } catch (err) {
      this.#lost(client, err)
      return
    }
    if (this.#client !== client) return
    this.#listening = true
    this.#beat(client)
    if (this.#downSince !== undefined) {
      const seconds = ((Date.now() - this.#downSince) / 1000).toFixed(1)
      this.#handlers.logger?.info(
        { channel: this.#channel },
        `LISTEN ${this.#channel}: listening again after ${seconds} s`,
      )
      this.#downSince = undefined
    }
    this.#call(() => this.#handlers.onUp?.())
  }

  /**
   * A handler's throw is logged, not passed on: it would otherwise unwind into node-postgres's
   * parser or a reconnect timer, and end the process.
   */
  #call(handler: () => void): void {
    try {
      handler()
    } catch (err) {
      this.#handlers.logger?.error({ err, channel: this.#channel }, `LISTEN ${this.#channel}: the handler failed`)
    }
  }

  async close(): Promise<void> {
    this.#closed = true
    this.#listening = false
    clearTimeout(this.#retry)
    clearTimeout(this.#heartbeat)
    const client = this.#client
    this.#client = undefined
    await client?.end().catch(() => undefined)
  }

  /** Ask the server for an answer every `heartbeatMs`; none within that is a lost session. */
  #beat(client: pg.Client): void {
    this.#heartbeat = setTimeout(async () => {
      const ms = this.#heartbeatMs
      const silent = setTimeout(() => this.#lost(client, new Error(`no answer to a heartbeat within ${ms} ms`)), ms)
      silent.unref()
      try {
        // Named in pg_stat_activity, where a session shows its last statement.
        await client.query(`/* LISTEN ${this.#channel} heartbeat */ select 1`)
      } catch (err) {
        this.#lost(client, err)
        return
      } finally {
        clearTimeout(silent)
      }
      if (this.#client === client) this.#beat(client)
    }, this.#heartbeatMs)
    this.#heartbeat.unref()
  }

  /** The current connection failed: drop it (its socket destroyed if a query is pending) and reconnect. */
  #lost(client: pg.Client, err: unknown): void {
    if (this.#client !== client) return
    this.#client = undefined
    this.#listening = false
    clearTimeout(this.#heartbeat)
    client.end().catch(() => undefined)
    this.#down(err)
  }

  #down(err: unknown): void {
    if (this.#closed) return
    if (this.#downSince === undefined) {
      this.#downSince = Date.now()
      const error = err instanceof Error ? err : new Error(String(err))
      this.#handlers.logger?.warn(
        { err: error, channel: this.#channel },
        `LISTEN ${this.#channel}: not listening; reconnecting every ${this.#retryMs} ms`,
      )
      this.#call(() => this.#handlers.onDown?.(error))
    }
    this.#retry = setTimeout(() => {
      this.#retry = undefined
      void this.attempt()
    }, this.#retryMs)
    this.#retry.unref()
  }
}
