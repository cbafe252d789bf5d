import type { Kysely, Transaction } from 'kysely'
import type { DB, UploadRow } from '../db/schema.ts'

type Db = Kysely<DB> | Transaction<DB>

export function getUpload(db: Db, id: string): Promise<UploadRow | undefined> {
  return db.selectFrom('uploads').selectAll().where('id', '=', id).executeTakeFirst()
}

/**
 * Make `attempt` the session's receiving PUT (from any state but committed). Returns the
 * SHA-256 of the bundle received before (null if none), or undefined when the session is
 * committed.
 */
export async function startAttempt(db: Db, id: string, attempt: string): Promise<string | null | undefined> {
  const r = await db
    .updateTable('uploads')
    .set({ state: 'receiving', put_attempt: attempt })
    .where('id', '=', id)
    .where('state', 'in', ['open', 'received', 'receiving'])
    .returning('zip_sha256')
    .executeTakeFirst()
  return r === undefined ? undefined : r.zip_sha256
}

/** The attempt's bundle is complete: it becomes the upload's, if no newer PUT took over. */
export async function finishAttempt(db: Db, id: string, attempt: string, size: number, sha256: string) {
  const r = await db
    .updateTable('uploads')
    .set({ state: 'received', size, zip_sha256: sha256, put_attempt: null })
    .where('id', '=', id)
    .where('state', '=', 'receiving')
    .where('put_attempt', '=', attempt)
    .executeTakeFirst()
  return Number(r.numUpdatedRows) === 1
}

/** The attempt failed: back to the earlier complete bundle, if any, unless a newer PUT took over. */
export async function abandonAttempt(db: Db, id: string, attempt: string) {
  for (const [state, hasBundle] of [
    ['open', false],
    ['received', true],
  ] as const) {
    await db
      .updateTable('uploads')
      .set({ state, put_attempt: null })
      .where('id', '=', id)
      .where('state', '=', 'receiving')
      .where('put_attempt', '=', attempt)
      .where('zip_sha256', hasBundle ? 'is not' : 'is', null)
      .execute()
  }
}

/** Mark the upload committed, only if it still holds the validated bundle; false otherwise. */
export async function markCommitted(db: Db, id: string, sha256: string): Promise<boolean> {
  const done = await db
    .updateTable('uploads')
    .set({ state: 'committed' })
    .where('id', '=', id)
    .where('state', '=', 'received')
    .where('zip_sha256', '=', sha256)
    .executeTakeFirst()
  return Number(done.numUpdatedRows) === 1
}
