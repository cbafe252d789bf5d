/**
 * Multi-node revocation on PostgreSQL. Every node caches "this version/share is live" for
 * up to LIVENESS_TTL_MS (caches.ts). A revoking or deleting transaction also runs
 * `pg_notify('artsvc_liveness')`, which PostgreSQL delivers to every listening session
 * when (and only if) the transaction commits; each node's listener then drops its cached
 * liveness, so other nodes stop serving the revoked share or deleted artifact as soon as
 * the notification arrives (on loopback, well under a millisecond), not up to a second
 * later.
 *
 * The second stays the worst case: a notification in flight, or one lost with a
 * connection that died without the node noticing yet, is covered by the TTL. While the
 * listener is known to be down, nothing is cached as live (every content request checks
 * the database), and the cache starts empty when it reconnects.
 */
import type { Logger } from '@gatehouse/kit'
import { type Kysely, sql, type Transaction } from 'kysely'
import type pg from 'pg'
import type { AppContext } from '../context.ts'
import type { DB } from '../db/schema.ts'
import type { ContentCaches } from './caches.ts'

export const LIVENESS_CHANNEL = 'artsvc_liveness'
const RECONNECT_MS = 1000

export function isPostgres(databaseUrl: string): boolean {
  return databaseUrl.startsWith('postgres://') || databaseUrl.startsWith('postgresql://')
}

/** In a revoking/deleting transaction: every node drops cached liveness when it commits. */
export async function announceRevocation(ctx: AppContext, tx: Kysely<DB> | Transaction<DB>) {
  if (isPostgres(ctx.config.database)) await sql`select pg_notify(${LIVENESS_CHANNEL}, '')`.execute(tx)
}

export class LivenessListener {
  readonly #open: () => Promise<pg.Client>
  readonly #caches: ContentCaches
  readonly #log: Logger
  #client: pg.Client | undefined
  #timer: NodeJS.Timeout | undefined
  #closed = false

  /** `open` gives a connection outside the pool: the database's own (`Database.connect`). */
  constructor(open: () => Promise<pg.Client>, caches: ContentCaches, log: Logger) {
    this.#open = open
    this.#caches = caches
    this.#log = log
  }

  /** Connect and LISTEN (liveness caching stays off until this succeeds; retried every second). */
  async start() {
    this.#caches.setLivenessCaching(false)
    await this.#connect()
  }

  async #connect() {
    if (this.#closed) return
    let client: pg.Client
    try {
      client = await this.#open()
    } catch (err) {
      this.#reconnectLater(err as Error)
      return
    }
    // Closed while connecting: the connection is not kept.
    if (this.#closed) {
      await client.end().catch(() => {})
      return
    }
    this.#client = client
    let down = false
    const onDown = (err?: Error) => {
      if (down) return
      down = true
      client.end().catch(() => {})
      this.#reconnectLater(err)
    }
    client.on('notification', () => this.#caches.invalidateLiveness())
    client.on('error', onDown)
    client.on('end', () => onDown())
    try {
      await client.query(`LISTEN ${LIVENESS_CHANNEL}`)
    } catch (err) {
      onDown(err as Error)
      return
    }
    if (!down) this.#caches.setLivenessCaching(true)
  }

  /** No listener: nothing is cached as live until the next connection is listening. */
  #reconnectLater(err?: Error) {
    this.#caches.setLivenessCaching(false)
    if (this.#closed) return
    this.#log.warn({ err }, 'liveness listener disconnected; content requests check the database until it is back')
    this.#timer = setTimeout(() => void this.#connect(), RECONNECT_MS)
    this.#timer.unref()
  }

  async close() {
    this.#closed = true
    clearTimeout(this.#timer)
    await this.#client?.end().catch(() => {})
  }
}
