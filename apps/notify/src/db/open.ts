/**
 * Opening the service database: the dialect is chosen by URL, migrations are numbered.
 *
 * SQLite is opened here rather than by the kit's openDatabase (same adapter, pragmas,
 * dialect and migration lock) so that the delivery path can also use the very connection
 * Kysely runs on, through prepared statements (ingest/delivery-store.ts): query building
 * cost more per delivery than the statements themselves.
 */
import { mkdirSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import type { DatabaseSync } from 'node:sqlite'
import {
  type Database,
  type DatabaseKind,
  type Migration,
  migrate,
  NodeSqliteDatabase,
  openDatabase,
  parseDatabaseUrl,
  StartupError,
  sql,
} from '@gatehouse/kit'
import { NodeSqliteDialect } from '@gatehouse/kit/db/sqlite-adapter.ts'
import { Kysely } from 'kysely'
import { initMigration } from './migrations/0001_init.ts'
import { searchVocabularyMigration } from './migrations/0002_search_vocabulary.ts'
import { searchBacklogMigration } from './migrations/0003_search_backlog.ts'
import { channelGenerationMigration } from './migrations/0004_channel_generation.ts'
import type { DB } from './schema.ts'

export function migrations(kind: DatabaseKind): Record<string, Migration> {
  return {
    '0001_init': initMigration(kind),
    '0002_search_vocabulary': searchVocabularyMigration(kind),
    '0003_search_backlog': searchBacklogMigration(kind),
    '0004_channel_generation': channelGenerationMigration(kind),
  }
}

export interface NotifyDatabase extends Database<DB> {
  /** SQLite only: the connection under `db` (one per process; see ingest/delivery-store.ts). */
  sqlite?: DatabaseSync
}

export async function openNotifyDatabase(url: string, poolSize?: number): Promise<NotifyDatabase> {
  const { kind, location } = parseDatabaseUrl(url)
  if (kind !== 'sqlite')
    return openDatabase<DB>({ url, migrations: migrations(kind), ...(poolSize ? { poolSize } : {}) })
  let file: NodeSqliteDatabase
  try {
    if (location !== ':memory:') mkdirSync(dirname(resolve(location)), { recursive: true })
    file = new NodeSqliteDatabase(location)
  } catch (err) {
    throw new StartupError(`database ${location} cannot be opened: ${(err as Error).message}`, { cause: err })
  }
  const db = new Kysely<DB>({ dialect: new NodeSqliteDialect({ database: file }) })
  const ping = async () => {
    await sql`select 1`.execute(db)
  }
  try {
    await ping()
    await migrate(db, migrations(kind))
  } catch (err) {
    await db.destroy().catch(() => {})
    if (err instanceof StartupError) throw err
    throw new StartupError(`database ${location} is unreachable: ${(err as Error).message}`, { cause: err })
  }
  return { db, kind, ping, close: () => db.destroy(), sqlite: file.raw }
}
