/**
 * One database API for both backends: Kysely over SQLite (the embedded default) or
 * PostgreSQL, chosen by URL (`sqlite:path`, `sqlite::memory:`, `postgres://…`), with
 * migrations applied at startup under Kysely's migration lock.
 */
import { mkdirSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import type { DatabaseSync } from 'node:sqlite'
import { type Dialect, Kysely, type Migration, type MigrationProvider, Migrator, PostgresDialect, sql } from 'kysely'
import pg from 'pg'
import { StartupError } from '../errors.ts'
import { NodeSqliteDatabase, NodeSqliteDialect } from './sqlite-adapter.ts'

export type { Migration } from 'kysely'
export { sql } from 'kysely'

export type DatabaseKind = 'sqlite' | 'postgres'

export interface DatabaseOptions {
  /** `sqlite:/var/lib/app/app.db`, `sqlite::memory:` or `postgres://user@host/db`. */
  url: string
  /** Migrations by name; applied in name order (use numbered names: `0001_init`). */
  migrations?: Record<string, Migration>
  /** PostgreSQL pool size (default 10). */
  poolSize?: number
}

export interface Database<DB> {
  db: Kysely<DB>
  kind: DatabaseKind
  /**
   * SQLite only: the connection `db` runs on, for prepared statements on a hot path where
   * building the query costs more than running it. Everything on it shares `db`'s
   * transactions: do not use it while a Kysely transaction may be open, or see its writes.
   */
  sqlite?: DatabaseSync
  /** Resolves when a trivial query succeeds; for `/readyz`. */
  ping(): Promise<void>
  close(): Promise<void>
}

// int8 and numeric come back as strings by default; our counters and timestamps fit in
// a double, so parse int8 as a number (values beyond 2^53 are refused by the schemas).
pg.types.setTypeParser(20, (v) => Number(v))

/** Parse a database URL into its kind and location (SQLite path or PostgreSQL URL). */
export function parseDatabaseUrl(url: string): { kind: DatabaseKind; location: string } {
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '')
    if (path === '')
      throw new StartupError(`database URL ${JSON.stringify(url)}: missing file path (sqlite:/path/to/file.db)`)
    return { kind: 'sqlite', location: path }
  }
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) {
    try {
      new URL(url)
    } catch {
      throw new StartupError('database URL is not a valid postgres:// URL')
    }
    return { kind: 'postgres', location: url }
  }
  throw new StartupError('database URL must start with sqlite: or postgres://')
}

function redact(url: string): string {
  try {
    const u = new URL(url)
    if (u.password) u.password = '***'
    return u.toString()
  } catch {
    return 'postgres://…'
  }
}

/**
 * Open the database, check it is reachable and apply pending migrations.
 * An unreachable server or failed migration is a `StartupError` with one line.
 *
 * @example const { db, close } = await openDatabase<DB>({ url: 'sqlite:./data/app.db', migrations })
 */
export async function openDatabase<DB>(options: DatabaseOptions): Promise<Database<DB>> {
  const { kind, location } = parseDatabaseUrl(options.url)
  let dialect: Dialect
  let sqlite: DatabaseSync | undefined
  if (kind === 'sqlite') {
    let file: NodeSqliteDatabase
    try {
      if (location !== ':memory:') mkdirSync(dirname(resolve(location)), { recursive: true })
      file = new NodeSqliteDatabase(location)
    } catch (err) {
      throw new StartupError(`database ${location} cannot be opened: ${(err as Error).message}`, { cause: err })
    }
    dialect = new NodeSqliteDialect({ database: file })
    sqlite = file.raw
  } else {
    const pool = new pg.Pool({
      connectionString: location,
      max: options.poolSize ?? 10,
      connectionTimeoutMillis: 10_000,
      idleTimeoutMillis: 30_000,
    })
    // An idle client losing its server must not crash the process; the next query reports it.
    pool.on('error', () => {})
    dialect = new PostgresDialect({ pool })
  }
  const db = new Kysely<DB>({ dialect })
  const ping = async () => {
    await sql`select 1`.execute(db)
  }
  try {
    await ping()
  } catch (err) {
    await db.destroy().catch(() => {})
    const where = kind === 'postgres' ? redact(location) : location
    throw new StartupError(`database ${where} is unreachable: ${(err as Error).message}`, { cause: err })
  }
  if (options.migrations) {
    try {
      await migrate(db, options.migrations)
    } catch (err) {
      await db.destroy().catch(() => {})
      throw err
    }
  }
  return { db, kind, ping, close: () => db.destroy(), ...(sqlite ? { sqlite } : {}) }
}

/** Apply pending migrations; concurrent starters wait on Kysely's lock. */
export async function migrate<DB>(db: Kysely<DB>, migrations: Record<string, Migration>): Promise<void> {
  const provider: MigrationProvider = { getMigrations: async () => migrations }
  const migrator = new Migrator({
    db,
    provider,
    migrationTableName: 'schema_migration',
    migrationLockTableName: 'schema_migration_lock',
  })
  const { error, results } = await migrator.migrateToLatest()
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')
    throw new StartupError(
      `database migration ${failed?.migrationName ?? ''} failed: ${(error as Error).message ?? String(error)}`.replace(
        '  ',
        ' ',
      ),
      { cause: error },
    )
  }
}

/** Whether an error is a unique-constraint violation on either backend. */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string; errcode?: number; message?: string }
  return (
    e?.code === '23505' ||
    e?.errcode === 2067 ||
    e?.errcode === 1555 ||
    /UNIQUE constraint failed/.test(e?.message ?? '')
  )
}
