/**
 * The database of an admin command (`notify token ...`, `notify migrate`): `--database`, else
 * `$NOTIFY_DATABASE_URL`, else the config file (`--config`, `$NOTIFY_CONFIG`, the stack's file
 * through bin/notify, `/etc/gatehouse/notify.json`).
 */
import { loadAppConfig } from '@gatehouse/kit/cli/config-file.ts'
import { schemaFlags } from '@gatehouse/kit/cli/schema-options.ts'
import type { ConfigOf, Schema } from '@gatehouse/kit/config.ts'
import { accessOptions, type DatabaseAccess } from '@gatehouse/kit/db/database.ts'
import { type NotifyDatabase, openNotifyDatabase } from '../db/open.ts'
import { adminSchema } from './admin-schema.ts'

export function databaseUrl(opts: Record<string, unknown>): string {
  return adminConfig(opts, adminSchema).database
}

/** The command's settings of `schema` (flags, environment, config file), e.g. the bcrypt cost. */
export function adminConfig<S extends Schema>(opts: Record<string, unknown>, schema: S): ConfigOf<S> {
  return loadAppConfig('notify', schema, {
    flags: schemaFlags(opts, schema),
    config: opts.config as string | undefined,
    partial: true,
  }).config
}

/** Run `fn` on the command's database and close it (`access`: the kit's `DatabaseAccess`). */
export async function withDatabase<T>(
  opts: Record<string, unknown>,
  fn: (d: NotifyDatabase) => Promise<T>,
  access: DatabaseAccess = 'write',
): Promise<T> {
  const database = await openNotifyDatabase(databaseUrl(opts), 2, {
    ...accessOptions(access),
    missingHint: 'give --database, set NOTIFY_DATABASE_URL or --config, or create it with notify migrate',
  })
  try {
    return await fn(database)
  } finally {
    await database.close()
  }
}

/** `withDatabase` for a command that only reads: a list or a report. */
export function readDatabase<T>(opts: Record<string, unknown>, fn: (d: NotifyDatabase) => Promise<T>): Promise<T> {
  return withDatabase(opts, fn, 'read')
}
