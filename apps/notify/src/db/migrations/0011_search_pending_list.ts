/**
 * PostgreSQL only: the trigram index's pending list may grow to 16 MB before an insert has to
 * merge it into the index itself; the server's search indexer (inbox/indexer.ts) merges it in
 * the background every pass, so the deliveries' inserts, which run one at a time under the
 * stream-order lock, only append to it. Searches read the pending list too, so results never
 * depend on whether the merge has run; the limit bounds that scan (and the work an insert
 * takes on when no server is merging).
 */
import { type DatabaseKind, type Migration, sql } from '@gatehouse/kit/db/database.ts'
import type { Kysely } from 'kysely'

/** The pending list's bound, in kB (PostgreSQL's default is 4 MB). */
export const SEARCH_PENDING_LIST_KB = 16 * 1024

export function searchPendingListMigration(kind: DatabaseKind): Migration {
  return {
    async up(db: Kysely<unknown>) {
      if (kind !== 'postgres') return
      await sql
        .raw(`alter index notifications_search set (gin_pending_list_limit = ${SEARCH_PENDING_LIST_KB})`)
        .execute(db)
    },
  }
}
