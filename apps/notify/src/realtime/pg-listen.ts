/**
 * PostgreSQL: one LISTEN connection per process. Every process's commits of notifications
 * and stream changes queue a NOTIFY (realtime/changes.ts, ingest/write-queue.ts), so each
 * process's hub runs a pass as soon as anything is committed anywhere. A lost connection
 * is reopened after a pause, followed by a pass (whatever was committed meanwhile is read
 * by position, so nothing is lost, only late).
 */
import type { Logger } from '@gatehouse/kit'
import pg from 'pg'
import { STREAM_PG_CHANNEL } from './changes.ts'

const RECONNECT_MS = 1000

export class PgListener {
  readonly #url: string
  readonly #logger: Logger
  readonly #onWake: () => void
  #client: pg.Client | undefined
  #timer: NodeJS.Timeout | undefined
  #closed = false

  constructor(url: string, logger: Logger, onWake: () => void) {
    this.#url = url
    this.#logger = logger
    this.#onWake = onWake
  }

  async start(): Promise<void> {
    const client = new pg.Client({ connectionString: this.#url })
    client.on('notification', () => this.#onWake())
    client.on('error', (err) => {
      this.#logger.warn({ err }, 'realtime LISTEN connection failed; reconnecting')
      this.#retry(client)
    })
    client.on('end', () => this.#retry(client))
    await client.connect()
    await client.query(`LISTEN ${STREAM_PG_CHANNEL}`)
    this.#client = client
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
