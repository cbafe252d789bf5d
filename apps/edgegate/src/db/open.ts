import { type Database, openDatabase } from '@gatehouse/kit/db/database.ts'
import { migrations } from './migrations.ts'
import type { DB } from './schema.ts'

export type EdgeDatabase = Database<DB>

/** What an admin command says when its database file is missing. */
export const MISSING_DATABASE_HINT =
  'point --database, $EDGEGATE_DATABASE or "database" in the config file ($EDGEGATE_CONFIG, /etc/gatehouse/edgegate.json) at the database edgegate serve uses, or run edgegate migrate to create it'

/**
 * Open (and migrate) the edgegate database at `url`. `serve` and `migrate` create a missing
 * SQLite file; admin commands pass `create: false` and get one line naming the path instead.
 */
export function openEdgeDatabase(
  url: string,
  poolSize?: number,
  options: { create?: boolean } = {},
): Promise<EdgeDatabase> {
  return openDatabase<DB>({
    url,
    migrations,
    create: options.create ?? true,
    missingHint: MISSING_DATABASE_HINT,
    ...(poolSize ? { poolSize } : {}),
  })
}
