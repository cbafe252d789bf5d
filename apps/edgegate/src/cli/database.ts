/** The database of an admin command: from --database, $EDGEGATE_DATABASE or the config file; never created. */
import { loadAppConfig } from '@gatehouse/kit/cli/config-file.ts'
import { CliError, UsageError } from '@gatehouse/kit/cli/program.ts'
import { schemaFlags } from '@gatehouse/kit/cli/schema-options.ts'
import { accessOptions, type DatabaseAccess } from '@gatehouse/kit/db/database.ts'
import { cliSchema } from '../config.ts'
import { type EdgeDatabase, openEdgeDatabase } from '../db/open.ts'
import { RegistryError } from '../nodes/registry.ts'

/** The database URL the options, environment and config file name. */
export function databaseUrl(opts: Record<string, unknown>): string {
  return loadAppConfig('edgegate', cliSchema, {
    flags: schemaFlags(opts, cliSchema),
    config: opts.config as string | undefined,
    partial: true,
  }).config.database
}

/**
 * Run `fn` on the command's database and close it (`access`: the kit's `DatabaseAccess`). Registry
 * mistakes become CLI errors (exit 1), malformed arguments usage errors (exit 2).
 */
export async function withDatabase<T>(
  opts: Record<string, unknown>,
  fn: (d: EdgeDatabase) => Promise<T>,
  access: DatabaseAccess = 'write',
): Promise<T> {
  const database = await openEdgeDatabase(databaseUrl(opts), 2, accessOptions(access))
  try {
    return await fn(database)
  } catch (err) {
    if (err instanceof RegistryError) throw err.usage ? new UsageError(err.message) : new CliError(err.message)
    throw err
  } finally {
    await database.close()
  }
}

/** `withDatabase` for a command that only reads: a list or a report. */
export function readDatabase<T>(opts: Record<string, unknown>, fn: (d: EdgeDatabase) => Promise<T>): Promise<T> {
  return withDatabase(opts, fn, 'read')
}
