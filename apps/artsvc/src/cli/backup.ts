/**
 * `artsvc backup FILE`: the database, copied while `serve` runs (the kit's `backupDatabase`).
 * Published files are written before the commit that names them and never deleted, so files
 * copied after the database include every one the copy names: the line printed says where.
 */
import { backupDatabase } from '@gatehouse/kit/cli/backup.ts'
import { loadAppConfig } from '@gatehouse/kit/cli/config-file.ts'
import { accessOptions, openDatabase } from '@gatehouse/kit/db/database.ts'
import { backupDatabaseUrl, backupSchema } from '../config.ts'
import { migrations } from '../db/migrations.ts'
import type { DB } from '../db/schema.ts'

export async function backup(
  flags: Record<string, unknown>,
  config: string | undefined,
  file: string,
): Promise<string> {
  const settings = loadAppConfig('artsvc', backupSchema, { flags, config, partial: true }).config
  const database = await openDatabase<DB>({
    url: backupDatabaseUrl(settings),
    migrations,
    ...accessOptions('read'),
    missingHint: 'give --database or --storage-root, set ARTSVC_DATABASE_URL or ARTSVC_STORAGE_ROOT, or --config',
  })
  try {
    const done = backupDatabase(database, file)
    return `${done}; now copy objects/ and manifests/ under ${settings.storageRoot} (or the bucket) after it`
  } finally {
    await database.close()
  }
}
