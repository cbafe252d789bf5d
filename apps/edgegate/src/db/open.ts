import { type Database, type DatabaseOptions, openDatabase, parseDatabaseUrl } from '@gatehouse/kit/db/database.ts'
import { migrations } from './migrations.ts'
import type { DB } from './schema.ts'

export type EdgeDatabase = Database<DB>

/** What an admin command says when its database file is missing. */
export const MISSING_DATABASE_HINT =
  'point --database, $EDGEGATE_DATABASE or "database" in the config file ($EDGEGATE_CONFIG, /etc/gatehouse/edgegate.json) at the database edgegate serve uses, or run edgegate migrate to create it'

/**
 * Open (and migrate) the edgegate database at `url`. `serve` and `migrate` create a missing
 * SQLite file; admin commands pass `create: false` and get one line naming the path instead.
 * `serve` also checkpoints SQLite's log in the background (the kit's `backgroundCheckpoints`).
 */
export function openEdgeDatabase(
  url: string,
  poolSize?: number,
  options: Pick<DatabaseOptions, 'create' | 'readsOnly' | 'backgroundCheckpoints' | 'onWarning'> = {},
): Promise<EdgeDatabase> {
  return openDatabase<DB>({
    url,
    migrations: migrations(parseDatabaseUrl(url).kind),
    missingHint: MISSING_DATABASE_HINT,
    ...(poolSize ? { poolSize } : {}),
    ...options,
    create: options.create ?? true,
  })
}
