import type { Kysely } from 'kysely'

// The PUT currently receiving an upload's bundle: a newer PUT takes over from one that was
// interrupted (crashed node, dropped client), and only the newest may complete.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('uploads').addColumn('put_attempt', 'text').execute()
}
