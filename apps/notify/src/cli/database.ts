/**
 * The database of an admin command (`notify token ...`, `notify migrate`): `--database`, else
 * `$NOTIFY_DATABASE_URL`, else the config file (`--config`, `$NOTIFY_CONFIG`, the stack's file
 * through bin/notify, `/etc/gatehouse/notify.json`). A SQLite file that does not exist is refused
 * (one line naming it) unless the command creates it (migrate).
 */
import { loadAppConfig } from '@gatehouse/kit/cli/config-file.ts'
import { schemaFlags } from '@gatehouse/kit/cli/schema-options.ts'
import { type NotifyDatabase, openNotifyDatabase } from '../db/open.ts'
import { adminSchema } from './admin-schema.ts'

export function databaseUrl(opts: Record<string, unknown>): string {
  return loadAppConfig('notify', adminSchema, {
    flags: schemaFlags(opts, adminSchema),
    config: opts.config as string | undefined,
    partial: true,
  }).config.database
}

/** Run `fn` on the command's database and close it. */
export async function withDatabase<T>(
  opts: Record<string, unknown>,
  fn: (d: NotifyDatabase) => Promise<T>,
  create = false,
): Promise<T> {
  const database = await openNotifyDatabase(databaseUrl(opts), 2, {
    create,
    missingHint: 'give --database, set NOTIFY_DATABASE_URL or --config, or create it with notify migrate',
  })
  try {
    return await fn(database)
  } finally {
    await database.close()
  }
}
