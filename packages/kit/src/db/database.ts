/**
 * One database API for both backends: Kysely over SQLite (the embedded default) or
 * PostgreSQL, chosen by URL (`sqlite:path`, `sqlite::memory:`, `postgres://…`), with
 * migrations applied at startup under Kysely's migration lock.
 */
import { dirname, resolve } from 'node:path'
import type { DatabaseSync } from 'node:sqlite'
import {
  type Compilable,
  CompiledQuery,
  type Dialect,
  Kysely,
  type Migration,
  type MigrationProvider,
  Migrator,
  sql,
} from 'kysely'
import type { Client as PgClient } from 'pg'
import { StartupError } from '../errors.ts'
import { mkdirPrivateSync, PRIVATE_FILE_MODE } from '../private-files.ts'
import { closeSync, existsSync, openSync } from '../startup-builtins.ts'
import type { ListenHandlers, ListenSession } from './pg-listen.ts'
import { PgPrepared, runSyncTransaction, SqlitePrepared } from './prepared.ts'
import { type ConnectionLock, NodeSqliteDatabase, NodeSqliteDialect } from './sqlite-adapter.ts'
import type { BackgroundCheckpoints } from './sqlite-checkpoint.ts'
import { type DatabaseKind, parseDatabaseUrl } from './url.ts'

export type { Migration } from 'kysely'
export { sql } from 'kysely'

export { type DatabaseKind, parseDatabaseUrl }

export interface DatabaseOptions {
  /** `sqlite:/var/lib/app/app.db`, `sqlite::memory:` or `postgres://user@host/db`. */
  url: string
  /** Migrations by name; applied in name order (use numbered names: `0001_init`). */
  migrations?: Record<string, Migration>
  /** PostgreSQL pool size (default 10). */
  poolSize?: number
  /**
   * PostgreSQL: how long a new connection may take to be ready, in ms (default 10 s). A server
   * that accepts and then never answers fails the query (or `connect`) instead of hanging it.
   */
  connectTimeoutMs?: number
  /**
   * PostgreSQL: how long a query may go without an answer before its connection is given up, in
   * ms (default 60 s; 0: no limit). The query fails as an unavailable database (503) and the pool
   * opens a new connection. Without it a server gone silent (a host down, a partition, a failover
   * to a new address) held each pooled connection for about 15 minutes (TCP's retransmissions),
   * or for ever while its host still acknowledged. Migrations run before it applies.
   * `?query_timeout=90s` in the URL overrides it (`pg-pool.ts`), so every app's operator can set it.
   */
  queryTimeoutMs?: number
  /**
   * SQLite: how long a statement waits for another connection's lock (an admin command, a
   * backup) before it fails as an unavailable database (503), in ms (default 5 s). The wait is
   * spent between attempts, with the event loop free, not inside SQLite.
   */
  busyTimeoutMs?: number
  /**
   * Create a SQLite file that does not exist (default true: `serve`). Admin commands pass
   * false, so pointing them at the wrong path fails instead of creating an empty database.
   */
  create?: boolean
  /** Appended to the "does not exist" error: how to point at the right database. */
  missingHint?: string
  /**
   * The caller only reads (a list or report command). A SQLite file whose file system no longer
   * takes writes (a disk error turned it read-only, a read-only mount or snapshot) is then opened
   * read-only instead of refused, so an operator can still look around; pending migrations are
   * then a StartupError instead of being applied. Where writes work it changes nothing.
   */
  readsOnly?: boolean
  /**
   * SQLite file only: copy the write-ahead log into the database file on a worker thread, not in
   * the call that commits (sqlite-checkpoint.ts). For servers, whose one thread every request
   * waits on; a command that exits soon gains nothing from the thread it would start.
   */
  backgroundCheckpoints?: boolean
  /** Told what goes wrong in the background (a checkpoint that failed, the worker gone). */
  onWarning?: (message: string) => void
}

/**
 * What an admin command does with its database: `read` (lists and reports: `readsOnly`, so they
 * still work on a SQLite file whose disk has turned read-only), `write`, or `create` (migrate;
 * the others refuse a missing SQLite file instead of creating an empty one).
 */
export type DatabaseAccess = 'read' | 'write' | 'create'

/** The options `access` stands for. */
export function accessOptions(access: DatabaseAccess): Pick<DatabaseOptions, 'create' | 'readsOnly'> {
  return { create: access === 'create', readsOnly: access === 'read' }
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
  /**
   * A query built and compiled once, run many times with new parameter values: the hot-path
   * form of `db`, at the cost of SQLite itself (building a query with Kysely costs more than
   * running a small one). Build it with example values; each call passes the values in the
   * order the query uses them (the order of `query.compile().parameters`).
   *
   * @example
   * const byName = database.prepare(db.selectFrom('item').selectAll().where('name', '=', ''))
   * const row = await byName.first('widget')
   */
  prepare<Row>(query: Compilable<Row>): PreparedQuery<Row>
  /**
   * SQLite only: run `fn` synchronously inside one `BEGIN IMMEDIATE` transaction as soon as the
   * connection is free, committing when it returns and rolling back when it throws. Prepared
   * queries run in it through `tx` without an await each: for write batches, where even one
   * await per statement costs a fifth of a small insert. `fn` must not return a promise.
   *
   * @example
   * await database.transactionSync?.((tx) => { for (const r of rows) tx.run(insert, r.id, r.name) })
   */
  transactionSync?: <T>(fn: (tx: SyncTransaction) => T) => Promise<T>
  /**
   * PostgreSQL only: a connection of its own, outside the pool, for a session that must stay
   * on one connection (LISTEN). It has the pool's settings: the URL without the kit's own
   * options, the connect timeout and TCP keep-alive (a server gone silent is noticed within
   * minutes, not hours). The caller listens for its `error` event and ends it.
   */
  connect?: () => Promise<PgClient>
  /**
   * PostgreSQL only: LISTEN on `channel` over a connection of its own that is reopened when
   * lost and checked by a heartbeat (pg-listen.ts). Resolves after the first attempt, listening
   * or not (a database down at start is retried in the background). Closed with the database.
   *
   * @example
   * const session = await database.listen?.('jobs', { onNotify: wake, onUp: wake, logger })
   */
  listen?: (channel: string, handlers: ListenHandlers) => Promise<ListenSession>
  /**
   * SQLite only: true when a `readsOnly` caller got the file read-only because its file system
   * no longer takes writes (a status command says so).
   */
  readOnly?: boolean
  /** Resolves when a trivial query succeeds; for `/readyz`. */
  ping(): Promise<void>
  close(): Promise<void>
}

/** A Kysely database or transaction of any schema: what a prepared query runs on. */
export type Executor = Pick<Kysely<unknown>, 'executeQuery' | 'isTransaction'>

/** See `Database.prepare`. */
export interface PreparedQuery<Row> {
  /** Every row. */
  all(...parameters: unknown[]): Promise<Row[]>
  /** The first row, or undefined. */
  first(...parameters: unknown[]): Promise<Row | undefined>
  /** Runs a write; resolves with the number of rows it changed. */
  run(...parameters: unknown[]): Promise<number>
  /** The same query inside a transaction of `db` (keep it for the transaction's loop). */
  in(trx: Executor): PreparedQuery<Row>
}

/** Prepared queries inside `Database.transactionSync`, run synchronously. */
export interface SyncTransaction {
  all<Row>(query: PreparedQuery<Row>, ...parameters: unknown[]): Row[]
  first<Row>(query: PreparedQuery<Row>, ...parameters: unknown[]): Row | undefined
  run(query: PreparedQuery<unknown>, ...parameters: unknown[]): number
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
  let prepare: <Row>(query: Compilable<Row>) => PreparedQuery<Row>
  let transactionSync: Database<DB>['transactionSync']
  let sqliteLock: ConnectionLock | undefined
  let connect: Database<DB>['connect']
  let listen: Database<DB>['listen']
  let startQueryDeadline: (() => void) | undefined
  let openedReadOnly = false
  if (kind === 'sqlite') {
    let file: NodeSqliteDatabase
    if (options.create === false && location !== ':memory:' && !existsSync(location)) {
      throw new StartupError(
        `database ${location} does not exist${options.missingHint ? `; ${options.missingHint}` : ''}`,
      )
    }
    try {
      if (location !== ':memory:') {
        // Owner-only (private-files.ts): created 0600 in a 0700 folder before SQLite opens
        // it; SQLite gives the -wal and -shm files the database file's mode.
        mkdirPrivateSync(dirname(resolve(location)))
        closeSync(openSync(location, 'a', PRIVATE_FILE_MODE))
      }
      file = new NodeSqliteDatabase(
        location,
        options.busyTimeoutMs === undefined ? {} : { busyTimeoutMs: options.busyTimeoutMs },
      )
    } catch (err) {
      // Loaded only here: every other start opens the file for writing.
      const readOnly = options.readsOnly ? await import('./sqlite-read-only.ts') : undefined
      if (!readOnly?.isReadOnlyFileSystem(err)) {
        throw new StartupError(`database ${location} cannot be opened: ${(err as Error).message}`, { cause: err })
      }
      file = readOnly.openSqliteReadOnly(location, options.busyTimeoutMs)
      openedReadOnly = true
    }
    const sqliteDialect = new NodeSqliteDialect(file)
    dialect = sqliteDialect
    sqlite = file.raw
    const lock = sqliteDialect.driver.lock
    sqliteLock = lock
    prepare = (query) => {
      const compiled = query.compile()
      return new SqlitePrepared(file, file.prepareKept(compiled.sql), lock, compiled, false)
    }
    transactionSync = (fn) => runSyncTransaction(file, lock, fn)
  } else {
    // Loaded only here: a SQLite command should not pay for the PostgreSQL driver.
    const { openPostgresPool } = await import('./pg-pool.ts')
    ;({ dialect, connect, listen, startQueryDeadline } = openPostgresPool(location, options))
  }
  const db = new Kysely<DB>({ dialect })
  if (kind === 'postgres') prepare = (query) => new PgPrepared(db, query.compile())
  const ping = async () => {
    await sql`select 1`.execute(db)
  }
  const where = kind === 'postgres' ? redact(location) : location
  try {
    await ping()
  } catch (err) {
    await db.destroy().catch(() => {})
    throw new StartupError(`database ${where} is unreachable: ${(err as Error).message}`, { cause: err })
  }
  if (options.migrations) {
    try {
      if (!openedReadOnly) await migrate(db, options.migrations, where)
      else {
        const state = await migrationState(db, options.migrations)
        if (state.unknown.length > 0) throw newerSchemaError(where, state.unknown)
        if (state.pending) {
          throw new StartupError(
            `database ${location} is on a read-only file system and needs migrations this version applies; read it with the version that wrote it`,
          )
        }
      }
    } catch (err) {
      await db.destroy().catch(() => {})
      throw err
    }
  }
  // A migration (an index built over a large table) may take longer than any request should.
  startQueryDeadline?.()
  // After the migrations, which may have written (and checkpointed) on their own.
  let checkpoints: BackgroundCheckpoints | undefined
  if (sqlite && options.backgroundCheckpoints && location !== ':memory:') {
    try {
      // Loaded only here: commands never start the worker, and start faster without the module.
      const { startBackgroundCheckpoints } = await import('./sqlite-checkpoint.ts')
      checkpoints = await startBackgroundCheckpoints(
        resolve(location),
        sqlite,
        sqliteLock!,
        options.onWarning ? { onError: options.onWarning } : {},
      )
    } catch (err) {
      // Not fatal: the connection checkpoints on commit, as without the option.
      options.onWarning?.(`checkpoints stay on commit: ${(err as Error).message}`)
    }
  }
  return {
    db,
    kind,
    ping,
    prepare: prepare!,
    close: async () => {
      await checkpoints?.stop()
      await db.destroy()
    },
    ...(sqlite ? { sqlite, transactionSync } : {}),
    ...(openedReadOnly ? { readOnly: true } : {}),
    ...(connect && listen ? { connect, listen } : {}),
  }
}

/**
 * Which of these migrations the database lacks, and which it has that this version does not
 * know: one plain read of the migration table. Kysely's Migrator checks the same under its lock,
 * but first creates its tables if missing, takes the lock in a transaction and builds a dozen
 * queries: a third of a list command's start-up memory (about 3.5 MiB of its ~64) and most of
 * its database time. A migration's row is written in the transaction that applies it, so a
 * complete set means every migration has committed. A table that cannot be read (a new
 * database) counts as nothing applied.
 */
async function migrationState<DB>(
  db: Kysely<DB>,
  migrations: Record<string, Migration>,
): Promise<{ pending: boolean; unknown: string[] }> {
  let names: string[]
  try {
    const { rows } = await db.executeQuery<{ name: string }>(CompiledQuery.raw('select name from schema_migration'))
    names = rows.map((r) => r.name)
  } catch {
    return { pending: true, unknown: [] }
  }
  const applied = new Set(names)
  return {
    pending: Object.keys(migrations).some((name) => !applied.has(name)),
    unknown: names.filter((name) => !Object.hasOwn(migrations, name)).sort(),
  }
}

/**
 * The one-line refusal for a database a newer release has migrated, the usual sight after rolling
 * a release back. Kysely's own words ("corrupted migrations: previously executed migration … is
 * missing") suggest damage where there is none, and say nothing of what to do.
 */
function newerSchemaError(where: string, unknown: string[]): StartupError {
  const listed =
    unknown.length > 3 ? `${unknown.slice(0, 3).join(', ')} and ${unknown.length - 3} more` : unknown.join(', ')
  return new StartupError(
    `database ${where} was migrated by a newer version (${listed}, which this version does not know); run that version or a later one, or restore a backup taken before the upgrade`,
  )
}

/**
 * Apply pending migrations; concurrent starters wait on Kysely's lock. A database holding
 * migrations this version does not know is refused with a `StartupError`, never written.
 */
export async function migrate<DB>(
  db: Kysely<DB>,
  migrations: Record<string, Migration>,
  where = 'schema',
): Promise<void> {
  const state = await migrationState(db, migrations)
  if (state.unknown.length > 0) throw newerSchemaError(where, state.unknown)
  if (!state.pending) return
  const provider: MigrationProvider = { getMigrations: async () => migrations }
  const migrator = new Migrator({
    db,
    provider,
    migrationTableName: 'schema_migration',
    migrationLockTableName: 'schema_migration_lock',
  })
  const { error, results } = await migrator.migrateToLatest()
  if (error) {
    // A newer release may have migrated between the read above and the Migrator's lock.
    const after = await migrationState(db, migrations).catch(() => undefined)
    if (after && after.unknown.length > 0) throw newerSchemaError(where, after.unknown)
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
