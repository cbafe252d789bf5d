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
 * connection that died without the node noticing yet (the session's heartbeat notices
 * within 20 s), is covered by the TTL. While the listener is known to be down, nothing is
 * cached as live (every content request checks the database), and the cache starts empty
 * when it reconnects.
 */
import type { Database, ListenSession, Logger } from '@gatehouse/kit'
import { type Kysely, sql, type Transaction } from 'kysely'
import type { AppContext } from '../context.ts'
import type { DB } from '../db/schema.ts'
import type { ContentCaches } from './caches.ts'

export const LIVENESS_CHANNEL = 'artsvc_liveness'

export function isPostgres(databaseUrl: string): boolean {
  return databaseUrl.startsWith('postgres://') || databaseUrl.startsWith('postgresql://')
}

/** In a revoking/deleting transaction: every node drops cached liveness when it commits. */
export async function announceRevocation(ctx: AppContext, tx: Kysely<DB> | Transaction<DB>) {
  if (isPostgres(ctx.config.database)) await sql`select pg_notify(${LIVENESS_CHANNEL}, '')`.execute(tx)
}

/**
 * Listen for revocations (PostgreSQL). Nothing is cached as live until the session listens,
 * nor while it is down (it reconnects every second, and a heartbeat notices a silent server
 * within 20 s); the cache starts empty each time it is back.
 */
export async function listenForRevocations(
  database: Database<DB>,
  caches: ContentCaches,
  log: Logger,
): Promise<ListenSession | undefined> {
  if (!database.listen) return undefined
  caches.setLivenessCaching(false)
  return database.listen(LIVENESS_CHANNEL, {
    onNotify: () => caches.invalidateLiveness(),
    onUp: () => caches.setLivenessCaching(true),
    onDown: () => {
      caches.setLivenessCaching(false)
      log.info('liveness listener down: content requests check the database until it is back')
    },
    logger: log,
  })
}
