/**
 * PostgreSQL: one LISTEN connection per process. Every process's commits of notifications
 * and stream changes queue a NOTIFY (realtime/changes.ts, ingest/write-queue.ts), so each
 * process's hub runs a pass as soon as anything is committed anywhere. A lost connection
 * is reopened after a pause, followed by a pass (whatever was committed meanwhile is read
 * by position, so nothing is lost, only late).
 */
import type { Logger } from '@gatehouse/kit'
import type pg from 'pg'
import { STREAM_PG_CHANNEL } from './changes.ts'

const RECONNECT_MS = 1000

export class PgListener {
  readonly #connect: () => Promise<pg.Client>
  readonly #logger: Logger
  readonly #onWake: () => void
  #client: pg.Client | undefined
  #timer: NodeJS.Timeout | undefined
  #closed = false

  /** `connect` opens a connection outside the pool: the database's own (`Database.connect`). */
  constructor(connect: () => Promise<pg.Client>, logger: Logger, onWake: () => void) {
    this.#connect = connect
    this.#logger = logger
    this.#onWake = onWake
  }

  async start(): Promise<void> {
    const client = await this.#connect()
    // Closed while connecting (a reconnect racing shutdown): the connection is not kept.
    if (this.#closed) {
      await client.end().catch(() => undefined)
      return
    }
    client.on('notification', () => this.#onWake())
    client.on('error', (err) => {
      this.#logger.warn({ err }, 'realtime LISTEN connection failed; reconnecting')
      this.#retry(client)
    })
    client.on('end', () => this.#retry(client))
    // Held before LISTEN, so a failure from here on ends this connection and reconnects.
    this.#client = client
    try {
      await client.query(`LISTEN ${STREAM_PG_CHANNEL}`)
    } catch (err) {
      this.#retry(client)
      throw err
    }
    this.#onWake()
  }

  async close(): Promise<void> {
    this.#closed = true
    if (this.#timer) clearTimeout(this.#timer)
    await this.#client?.end().catch(() => undefined)
  }

  /** The current connection failed: drop it and reconnect later. */
  #retry(client: pg.Client): void {
    if (this.#client !== client) return
    this.#client = undefined
    client.end().catch(() => undefined)
    this.#schedule()
  }

  #schedule(): void {
    if (this.#closed || this.#timer) return
    this.#timer = setTimeout(() => {
      this.#timer = undefined
      this.start().catch((err: unknown) => {
        this.#logger.warn({ err }, 'realtime LISTEN reconnect failed')
        this.#schedule()
      })
    }, RECONNECT_MS)
    this.#timer.unref()
  }
}
