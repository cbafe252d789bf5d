/**
 * Prepared queries (`Database.prepare`) on both backends, and SQLite's `transactionSync`: a
 * query built and compiled once, run with new parameter values at the cost of the database
 * itself. On SQLite a statement runs at once when the connection is free and waits out
 * another connection's lock between attempts (`retryWhileBusy`).
 */
import { CompiledQuery } from 'kysely'
import type { Executor, PreparedQuery, SyncTransaction } from './database.ts'
import { type ConnectionLock, type NodeSqliteDatabase, retryWhileBusy, type Statement } from './sqlite-adapter.ts'
import { isSqliteBusy } from './unavailable.ts'

function checkCount(compiled: CompiledQuery, parameters: unknown[]): void {
  if (parameters.length !== compiled.parameters.length) {
    throw new TypeError(
      `prepared query takes ${compiled.parameters.length} parameters, got ${parameters.length}: ${compiled.sql}`,
    )
  }
}

/**
 * SQLite: the statement runs at once, synchronously, when nothing holds the connection, and
 * otherwise waits its turn behind the transaction or query holding it, like a Kysely query.
 * Bound to a transaction (`in`), it runs on the connection that transaction holds.
 */
export class SqlitePrepared<Row> implements PreparedQuery<Row> {
  readonly #file: NodeSqliteDatabase
  readonly #stmt: Statement
  readonly #lock: ConnectionLock
  readonly #compiled: CompiledQuery
  readonly #count: number
  /** Bound to a transaction, which holds the connection: run without looking at the lock. */
  readonly #direct: boolean

  constructor(
    file: NodeSqliteDatabase,
    stmt: Statement,
    lock: ConnectionLock,
    compiled: CompiledQuery,
    direct: boolean,
  ) {
    this.#file = file
    this.#stmt = stmt
    this.#lock = lock
    this.#compiled = compiled
    this.#count = compiled.parameters.length
    this.#direct = direct
  }

  // Each method runs the statement at once when it may (the hot path: no closure, no
  // extra promise) and otherwise queues behind the lock's holder.
  all(...parameters: unknown[]): Promise<Row[]> {
    if (!this.#direct && this.#lock.held) return this.#later(ALL, parameters) as Promise<Row[]>
    try {
      if (parameters.length !== this.#count) checkCount(this.#compiled, parameters)
      return Promise.resolve(this.#stmt.all(parameters) as Row[])
    } catch (err) {
      return this.#failed(ALL, parameters, err) as Promise<Row[]>
    }
  }

  first(...parameters: unknown[]): Promise<Row | undefined> {
    if (!this.#direct && this.#lock.held) return this.#later(FIRST, parameters) as Promise<Row | undefined>
    try {
      if (parameters.length !== this.#count) checkCount(this.#compiled, parameters)
      return Promise.resolve(this.#stmt.first(parameters) as Row | undefined)
    } catch (err) {
      return this.#failed(FIRST, parameters, err) as Promise<Row | undefined>
    }
  }

  run(...parameters: unknown[]): Promise<number> {
    if (!this.#direct && this.#lock.held) return this.#later(RUN, parameters) as Promise<number>
    try {
      if (parameters.length !== this.#count) checkCount(this.#compiled, parameters)
      return Promise.resolve(this.#stmt.changes(parameters))
    } catch (err) {
      return this.#failed(RUN, parameters, err) as Promise<number>
    }
  }

  in(trx: Executor): PreparedQuery<Row> {
    if (!trx.isTransaction) throw new TypeError('prepared query: in() takes a transaction')
    return new SqlitePrepared(this.#file, this.#stmt, this.#lock, this.#compiled, true)
  }

  /** The statement, for `transactionSync`, after checking the parameters. */
  statementFor(parameters: unknown[]): Statement {
    if (parameters.length !== this.#count) checkCount(this.#compiled, parameters)
    return this.#stmt
  }

  #exec(op: number, parameters: unknown[]): unknown {
    if (op === FIRST) return this.#stmt.first(parameters)
    if (op === ALL) return this.#stmt.all(parameters)
    return this.#stmt.changes(parameters)
  }

  async #later(op: number, parameters: unknown[]): Promise<unknown> {
    await this.#lock.acquire()
    try {
      checkCount(this.#compiled, parameters)
      try {
        return this.#exec(op, parameters)
      } catch (err) {
        return await retryWhileBusy(this.#file, this.#lock, () => this.#exec(op, parameters), err)
      }
    } finally {
      this.#lock.release()
    }
  }

  /** Run at once and failed: another connection's lock is waited out like in `#later`. */
  async #failed(op: number, parameters: unknown[], err: unknown): Promise<unknown> {
    // In a transaction (bound to one, or the raw connection's own) nothing is retried.
    if (this.#direct || !isSqliteBusy(err)) throw err
    await this.#lock.acquire()
    try {
      return await retryWhileBusy(this.#file, this.#lock, () => this.#exec(op, parameters), err)
    } finally {
      this.#lock.release()
    }
  }
}

/** `Database.transactionSync` on SQLite. */
export async function runSyncTransaction<T>(
  file: NodeSqliteDatabase,
  lock: ConnectionLock,
  fn: (tx: SyncTransaction) => T,
): Promise<T> {
  const raw = file.raw
  await lock.acquire()
  let open = true
  const statement = (query: PreparedQuery<unknown>, parameters: unknown[]): Statement => {
    if (!open) throw new TypeError('transactionSync: the transaction has ended')
    if (!(query instanceof SqlitePrepared))
      throw new TypeError('transactionSync: not a prepared query of this database')
    return query.statementFor(parameters)
  }
  const tx: SyncTransaction = {
    all: (query, ...parameters) => statement(query, parameters).all(parameters) as never,
    first: (query, ...parameters) => statement(query, parameters).first(parameters) as never,
    run: (query, ...parameters) => statement(query, parameters).changes(parameters),
  }
  try {
    try {
      raw.exec('BEGIN IMMEDIATE')
    } catch (err) {
      await retryWhileBusy(file, lock, () => raw.exec('BEGIN IMMEDIATE'), err)
    }
    try {
      const result = fn(tx)
      if (result instanceof Promise) {
        result.catch(() => {})
        throw new TypeError('transactionSync: the callback returned a promise; it must be synchronous')
      }
      raw.exec('COMMIT')
      return result
    } catch (err) {
      // SQLite may have rolled back already (some errors end the transaction themselves).
      if (raw.isTransaction) raw.exec('ROLLBACK')
      throw err
    }
  } finally {
    open = false
    lock.release()
  }
}

const ALL = 0
const FIRST = 1
const RUN = 2

/** PostgreSQL: the compiled SQL through Kysely's executor, skipping only building and compiling. */
export class PgPrepared<Row> implements PreparedQuery<Row> {
  readonly #executor: Executor
  readonly #compiled: CompiledQuery

  constructor(executor: Executor, compiled: CompiledQuery) {
    this.#executor = executor
    this.#compiled = compiled
  }

  async all(...parameters: unknown[]): Promise<Row[]> {
    checkCount(this.#compiled, parameters)
    const result = await this.#executor.executeQuery<Row>(CompiledQuery.raw(this.#compiled.sql, parameters))
    return result.rows
  }

  async first(...parameters: unknown[]): Promise<Row | undefined> {
    return (await this.all(...parameters))[0]
  }

  async run(...parameters: unknown[]): Promise<number> {
    checkCount(this.#compiled, parameters)
    const result = await this.#executor.executeQuery(CompiledQuery.raw(this.#compiled.sql, parameters))
    return Number(result.numAffectedRows ?? 0n)
  }

  in(trx: Executor): PreparedQuery<Row> {
    if (!trx.isTransaction) throw new TypeError('prepared query: in() takes a transaction')
    return new PgPrepared(trx, this.#compiled)
  }
}
