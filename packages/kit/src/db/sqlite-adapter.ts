/**
 * Adapts the built-in `node:sqlite` to the better-sqlite3 shape Kysely's SqliteDialect
 * expects, with a bounded prepared-statement cache (preparing is most of the cost of a
 * small query).
 */
import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite'
import {
  CompiledQuery,
  createQueryId,
  type DatabaseConnection,
  type DialectAdapter,
  type Driver,
  IdentifierNode,
  type QueryCompiler,
  type QueryResult,
  RawNode,
  SelectQueryNode,
  SqliteAdapter,
  type SqliteDatabase,
  SqliteDialect,
  type SqliteStatement,
} from 'kysely'
import { isSqliteBusy } from './unavailable.ts'

const CACHE_SIZE = 256

/**
 * How long one attempt waits inside SQLite for another connection's lock. SQLite's busy
 * handler sleeps on the calling thread, which is a server's only one: a 5 s wait there stopped
 * every request, health check and stream, twice over for a request that wrote twice. Longer
 * waits are pauses between attempts instead (`retryWhileBusy`), with the event loop free.
 */
const BUSY_SLICE_MS = 10
/** The first pause after a busy attempt, doubled each time up to the last. */
const BUSY_PAUSES_MS = [5, 100] as const

/**
 * `PRAGMA journal_mode = WAL`, attempted again while SQLite answers SQLITE_BUSY, for up to
 * `timeoutMs`. Two processes switching a new file at once each hold a shared lock the other's
 * exclusive one waits on, so SQLite fails one of them at once instead of calling its busy
 * handler (one start in three failed when two processes opened a new file together). The pauses
 * block the thread: opening has nothing else to run yet.
 */
function switchToWal(raw: DatabaseSync, timeoutMs: number): void {
  const deadline = Date.now() + timeoutMs
  for (let pause: number = BUSY_PAUSES_MS[0]; ; pause = Math.min(pause * 2, BUSY_PAUSES_MS[1])) {
    try {
      raw.exec('PRAGMA journal_mode = WAL')
      return
    } catch (err) {
      const left = deadline - Date.now()
      if (!isSqliteBusy(err) || left <= 0) throw err
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, Math.min(pause, left))
    }
  }
}

/** Parameters as node:sqlite takes them; allocates only when a value needs converting. */
function bind(parameters: ReadonlyArray<unknown>): readonly SQLInputValue[] {
  for (let i = 0; i < parameters.length; i++) {
    const p = parameters[i]
    if (typeof p === 'boolean' || p instanceof Date || p === undefined) return parameters.map(convert)
  }
  return parameters as readonly SQLInputValue[]
}

function convert(p: unknown): SQLInputValue {
  if (typeof p === 'boolean') return p ? 1 : 0
  if (p instanceof Date) return p.toISOString()
  if (p === undefined) return null
  return p as SQLInputValue
}

/** Whether a statement that returns rows may also write (`INSERT … RETURNING`); a false positive only costs `first` a full read. */
const RETURNING = /\breturning\b/i

export class Statement implements SqliteStatement {
  readonly reader: boolean
  /** Recency for the statement cache (a counter, see `NodeSqliteDatabase.prepare`). */
  used = 0
  readonly #stmt: StatementSync
  readonly #names: string[]
  /** Returns rows and writes: `first` must step it to the end (see there). */
  readonly #writes: boolean
  constructor(stmt: StatementSync, sql: string) {
    this.#stmt = stmt
    this.#names = stmt.columns().map((c) => c.name)
    this.reader = this.#names.length > 0
    this.#writes = this.reader && RETURNING.test(sql)
    // node:sqlite's row objects have a null prototype (PostgreSQL rows are plain objects,
    // and deepStrictEqual tells them apart); building plain objects from arrays is also
    // cheaper than copying those rows.
    if (this.reader) stmt.setReturnArrays(true)
  }
  #object(row: unknown): Record<string, unknown> {
    const values = row as unknown[]
    const names = this.#names
    const out: Record<string, unknown> = {}
    for (let i = 0; i < names.length; i++) out[names[i]!] = values[i]
    return out
  }
  all(parameters: ReadonlyArray<unknown>): unknown[] {
    const rows = this.#stmt.all(...bind(parameters))
    const out = new Array<unknown>(rows.length)
    for (let i = 0; i < rows.length; i++) out[i] = this.#object(rows[i])
    return out
  }
  /**
   * The first row as a plain object, or undefined. A writing statement runs to its end: outside
   * a transaction its commit happens there, and node:sqlite's `get()` resets the statement after
   * the first row without reporting that commit's failure (a full disk, a deferred foreign key),
   * so an `INSERT … RETURNING` returned an id for a row that was rolled back.
   */
  first(parameters: ReadonlyArray<unknown>): Record<string, unknown> | undefined {
    const row = this.#writes ? this.#stmt.all(...bind(parameters))[0] : this.#stmt.get(...bind(parameters))
    return row === undefined ? undefined : this.#object(row)
  }
  /** Runs a write; the number of rows it changed. */
  changes(parameters: ReadonlyArray<unknown>): number {
    return Number(this.#stmt.run(...bind(parameters)).changes)
  }
  run(parameters: ReadonlyArray<unknown>) {
    const r = this.#stmt.run(...bind(parameters))
    return { changes: r.changes, lastInsertRowid: r.lastInsertRowid }
  }
  *iterate(parameters: ReadonlyArray<unknown>): IterableIterator<unknown> {
    for (const row of this.#stmt.iterate(...bind(parameters))) yield this.#object(row)
  }
}

export interface SqliteOptions {
  /** How long a statement waits for another connection's lock, in ms (default 5 s). */
  busyTimeoutMs?: number
  /** Open for reading only, as it is (no switch to WAL): `sqlite-read-only.ts`. */
  readOnly?: boolean
}

/**
 * A `node:sqlite` database in WAL mode with foreign keys on and a busy timeout. The raw
 * connection waits at most `BUSY_SLICE_MS` inside SQLite; the kit's paths (Kysely, prepared
 * queries, `transactionSync`) wait out the rest of `busyTimeoutMs` between attempts.
 */
export class NodeSqliteDatabase implements SqliteDatabase {
  readonly raw: DatabaseSync
  readonly busyTimeoutMs: number
  readonly #cache = new Map<string, Statement>()
  #tick = 0

  constructor(path: string | URL, options: SqliteOptions = {}) {
    this.busyTimeoutMs = options.busyTimeoutMs ?? 5000
    // Opening waits the whole timeout inside SQLite: a file being switched to WAL, or whose last
    // connection is closing, is locked for a moment, and nothing else runs yet.
    this.raw = new DatabaseSync(path, { timeout: this.busyTimeoutMs, readOnly: options.readOnly === true })
    if (!options.readOnly) {
      switchToWal(this.raw, this.busyTimeoutMs)
      this.raw.exec('PRAGMA synchronous = NORMAL')
    }
    this.raw.exec('PRAGMA foreign_keys = ON')
    this.raw.exec(`PRAGMA busy_timeout = ${Math.min(BUSY_SLICE_MS, this.busyTimeoutMs)}`)
  }

  /** A statement of its own, outside the cache: for queries prepared once and kept (`Database.prepare`). */
  prepareKept(sql: string): Statement {
    return new Statement(this.raw.prepare(sql), sql)
  }

  prepare(sql: string): SqliteStatement {
    let stmt = this.#cache.get(sql)
    if (stmt === undefined) {
      if (this.#cache.size >= CACHE_SIZE) this.#evict()
      stmt = new Statement(this.raw.prepare(sql), sql)
      this.#cache.set(sql, stmt)
    }
    // Recency as a counter: moving the key to the end of the Map on every hit (delete +
    // set) cost ~0.4 µs per query, a fifth of an indexed read. Eviction scans instead,
    // and only on a miss, where preparing costs far more than the scan.
    stmt.used = ++this.#tick
    return stmt
  }

  #evict() {
    let oldest: string | undefined
    let min = Number.POSITIVE_INFINITY
    for (const [sql, stmt] of this.#cache) {
      if (stmt.used < min) {
        min = stmt.used
        oldest = sql
      }
    }
    if (oldest !== undefined) this.#cache.delete(oldest)
  }

  close(): void {
    this.#cache.clear()
    if (this.raw.isOpen) this.raw.close()
  }
}

// Kysely's SQLite adapter declares no transactional DDL, so its migrator runs SQLite
// migrations outside any transaction and without a lock: two processes starting on the
// same file both apply a migration ("table already exists"), and a failing migration
// leaves its first statements behind. SQLite does have transactional DDL; declaring it
// makes the migrator run all pending migrations in one transaction.
class TransactionalSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true
  }
}

/**
 * The one connection's lock. Kysely's own SQLite driver keeps it private; ours can be asked
 * whether it is free, so a prepared query can run at once, synchronously, when no
 * transaction or other query holds the connection (`Database.prepare`).
 */
export class ConnectionLock {
  #held = false
  #waiters: (() => void)[] = []

  get held(): boolean {
    return this.#held
  }

  async acquire(): Promise<void> {
    if (!this.#held) {
      this.#held = true
      return
    }
    await new Promise<void>((resolve) => this.#waiters.push(resolve))
  }

  release(): void {
    // Hand the lock straight to the next waiter: nobody can slip in between.
    const next = this.#waiters.shift()
    if (next) next()
    else this.#held = false
  }
}

/**
 * `err` is what an attempt on `db` threw while the caller held `lock`. While it is SQLITE_BUSY
 * outside a transaction (the statement rolled back whole: nothing done, nothing held), attempt
 * again after a pause with the connection released to other work, until `db.busyTimeoutMs`
 * has passed. The caller holds `lock` again when this settles, either way.
 */
export async function retryWhileBusy<T>(
  db: NodeSqliteDatabase,
  lock: ConnectionLock,
  attempt: () => T,
  err: unknown,
): Promise<T> {
  const deadline = Date.now() + db.busyTimeoutMs - BUSY_SLICE_MS
  let pause: number = BUSY_PAUSES_MS[0]
  for (;;) {
    const left = deadline - Date.now()
    if (!isSqliteBusy(err) || db.raw.isTransaction || left <= 0) throw err
    lock.release()
    await new Promise((resolve) => setTimeout(resolve, Math.min(pause, left)))
    pause = Math.min(pause * 2, BUSY_PAUSES_MS[1])
    await lock.acquire()
    try {
      return attempt()
    } catch (next) {
      err = next
    }
  }
}

class NodeSqliteConnection implements DatabaseConnection {
  readonly #db: NodeSqliteDatabase
  readonly #lock: ConnectionLock
  constructor(db: NodeSqliteDatabase, lock: ConnectionLock) {
    this.#db = db
    this.#lock = lock
  }

  /** Kysely holds the connection (`lock`) while it runs a query. */
  executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    try {
      return Promise.resolve(this.#run<R>(compiledQuery))
    } catch (err) {
      return retryWhileBusy(this.#db, this.#lock, () => this.#run<R>(compiledQuery), err)
    }
  }

  #run<R>(compiledQuery: CompiledQuery): QueryResult<R> {
    const stmt = this.#db.prepare(compiledQuery.sql)
    if (stmt.reader) return { rows: stmt.all(compiledQuery.parameters) as R[] }
    const { changes, lastInsertRowid } = stmt.run(compiledQuery.parameters)
    return { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] }
  }

  async *streamQuery<R>(compiledQuery: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    if (!SelectQueryNode.is(compiledQuery.query)) throw new Error('SQLite streams select queries only')
    const stmt = this.#db.prepare(compiledQuery.sql)
    for (const row of stmt.iterate(compiledQuery.parameters)) yield { rows: [row as R] }
  }
}

/**
 * Kysely's SQLite driver contract over one `NodeSqliteDatabase`, with two differences from
 * Kysely's own: the connection lock is visible (see `ConnectionLock`), and transactions
 * begin with `BEGIN IMMEDIATE`, which takes the write lock up front, waiting up to the busy
 * timeout for another connection (between attempts: `retryWhileBusy`). A deferred `BEGIN` would upgrade its read lock on the
 * first write and, in WAL mode, fail at once with SQLITE_BUSY when another writer committed
 * in between (https://www.sqlite.org/lang_transaction.html). This is also what serialises
 * concurrent migrators across processes.
 */
export class NodeSqliteDriver implements Driver {
  readonly lock = new ConnectionLock()
  readonly #db: NodeSqliteDatabase
  readonly #connection: NodeSqliteConnection

  constructor(db: NodeSqliteDatabase) {
    this.#db = db
    this.#connection = new NodeSqliteConnection(db, this.lock)
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    await this.lock.acquire()
    return this.#connection
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'))
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('commit'))
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    // SQLite may have rolled back already: a full disk, an I/O error or memory running out end the
    // whole transaction (https://www.sqlite.org/lang_transaction.html). A ROLLBACK then fails with
    // "no transaction is active", and Kysely would throw that instead of the error that mattered.
    if (!this.#db.raw.isTransaction) return
    await connection.executeQuery(CompiledQuery.raw('rollback'))
  }

  async savepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']): Promise<void> {
    await connection.executeQuery(compile(parseSavepoint('savepoint', name), createQueryId()))
  }

  async rollbackToSavepoint(
    connection: DatabaseConnection,
    name: string,
    compile: QueryCompiler['compileQuery'],
  ): Promise<void> {
    await connection.executeQuery(compile(parseSavepoint('rollback to', name), createQueryId()))
  }

  async releaseSavepoint(
    connection: DatabaseConnection,
    name: string,
    compile: QueryCompiler['compileQuery'],
  ): Promise<void> {
    await connection.executeQuery(compile(parseSavepoint('release', name), createQueryId()))
  }

  async releaseConnection(): Promise<void> {
    this.lock.release()
  }

  async destroy(): Promise<void> {
    this.#db.close()
  }
}

function parseSavepoint(command: 'savepoint' | 'rollback to' | 'release', name: string): RawNode {
  return RawNode.createWithChildren([RawNode.createWithSql(`${command} `), IdentifierNode.create(name)])
}

/** Kysely's SqliteDialect with the kit's driver (visible lock, immediate transactions) and transactional migrations. */
export class NodeSqliteDialect extends SqliteDialect {
  readonly driver: NodeSqliteDriver
  constructor(db: NodeSqliteDatabase) {
    super({ database: db })
    this.driver = new NodeSqliteDriver(db)
  }
  override createDriver(): Driver {
    return this.driver
  }
  override createAdapter(): DialectAdapter {
    return new TransactionalSqliteAdapter()
  }
}
