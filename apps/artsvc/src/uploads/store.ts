import type { Kysely, Transaction } from 'kysely'
import type { DB, UploadRow, UploadTable } from '../db/schema.ts'

type Db = Kysely<DB> | Transaction<DB>

export function getUpload(db: Db, id: string): Promise<UploadRow | undefined> {
  return db.selectFrom('uploads').selectAll().where('id', '=', id).executeTakeFirst()
}

/** Move an upload between states only from the expected one; false when someone else moved it first. */
export async function transition(
  db: Db,
  id: string,
  from: UploadTable['state'][],
  to: UploadTable['state'],
  extra: Partial<Pick<UploadTable, 'size' | 'zip_sha256'>> = {},
): Promise<boolean> {
  const r = await db
    .updateTable('uploads')
    .set({ state: to, ...extra })
    .where('id', '=', id)
    .where('state', 'in', from)
    .executeTakeFirst()
  return Number(r.numUpdatedRows) === 1
}
