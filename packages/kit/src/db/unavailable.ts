/**
 * Whether a query failed because the database could not be reached or could not write, not
 * because of the query: the server refused, dropped or timed out the connection, or is shutting
 * down, starting up, out of connections or disk space, read-only (a hot standby after a failover,
 * or `default_transaction_read_only` for maintenance) or failing to read or write its files; or,
 * on SQLite, another connection held the file's lock for longer than the busy timeout, the disk
 * is full, or the file cannot be written (an I/O error, a file system remounted read-only after
 * a disk error). Such a request answers 503 (try again once an operator has freed space, the lock
 * or the disk), not 500 (kit http.ts); reads that still work go on answering.
 *
 * A socket error alone (ECONNREFUSED, ECONNRESET) says nothing about which server failed: an
 * outbound call's error carries the same codes. So the kit's pool marks the errors of its own
 * connection attempts and connections (`markUnavailable`), and otherwise only PostgreSQL's own
 * codes and node-postgres's own messages count. No imports: the HTTP layer loads this whether or not a database is used.
 */

const UNAVAILABLE = Symbol('gatehouse.databaseUnavailable')

/**
 * PostgreSQL SQLSTATEs: going away, starting, out of disk or connections, a read-only transaction
 * (25006: the server is a standby, or set read-only), an I/O error (58030); class 08 is the
 * connection's. The kit's pool drops a connection that failed so (pg-pool.ts), so the next one
 * may reach the new primary.
 */
const PG_CODES = new Set(['57P01', '57P02', '57P03', '53100', '53300', '25006', '58030'])
/** What node-postgres and its pool say, without a code, when a connection ends or cannot be had. */
const DRIVER_MESSAGES = new Set([
  'Connection terminated',
  'Connection terminated unexpectedly',
  'Connection terminated due to connection timeout',
  'timeout exceeded when trying to connect',
  'Client has encountered a connection error and is not queryable',
])

/** Mark an error of a database connection or of opening one (the kit's pool does); returns it. */
export function markUnavailable(err: unknown): unknown {
  if (err && typeof err === 'object') (err as Record<symbol, boolean>)[UNAVAILABLE] = true
  return err
}

/**
 * SQLite result codes, by their primary byte: BUSY (the lock was held past the busy timeout),
 * LOCKED, READONLY (the file or its folder cannot be written), IOERR (a read or write of the
 * file failed), FULL (the disk). CORRUPT and NOTADB are not here: no wait mends them.
 */
const SQLITE_BUSY = 5
const SQLITE_LOCKED = 6
const SQLITE_READONLY = 8
const SQLITE_IOERR = 10
const SQLITE_FULL = 13
const SQLITE_UNAVAILABLE = new Set([SQLITE_BUSY, SQLITE_LOCKED, SQLITE_READONLY, SQLITE_IOERR, SQLITE_FULL])

/** node:sqlite's SQLITE_BUSY (any extended code): another connection held the lock this statement needed. */
export function isSqliteBusy(err: unknown): boolean {
  if (!err || typeof err !== 'object') return false
  const { code, errcode } = err as { code?: unknown; errcode?: unknown }
  return code === 'ERR_SQLITE_ERROR' && typeof errcode === 'number' && (errcode & 0xff) === SQLITE_BUSY
}

/** Whether `err` (as a query or connection attempt rejected) means the database is unavailable. */
export function isDatabaseUnavailable(err: unknown): boolean {
  if (!err || typeof err !== 'object') return false
  if ((err as Record<symbol, unknown>)[UNAVAILABLE] === true) return true
  const { code, severity, message, errcode } = err as {
    code?: unknown
    severity?: unknown
    message?: unknown
    errcode?: unknown
  }
  // node:sqlite: a writer (an admin command, another process) held the file for longer than the
  // wait, or the disk is full or failing.
  if (code === 'ERR_SQLITE_ERROR' && typeof errcode === 'number') return SQLITE_UNAVAILABLE.has(errcode & 0xff)
  // A PostgreSQL error (it has a severity): by its SQLSTATE.
  if (typeof severity === 'string' && typeof code === 'string') return PG_CODES.has(code) || code.startsWith('08')
  return typeof message === 'string' && DRIVER_MESSAGES.has(message)
}

/**
 * What an operator can do about an unavailable database, for a command's one-line error: waiting
 * helps a held lock or a restarting server, not a full disk, a failing one or a standby.
 */
export function unavailableAdvice(err: unknown): string {
  const { code, errcode } = (err ?? {}) as { code?: unknown; errcode?: unknown }
  if (code === 'ERR_SQLITE_ERROR' && typeof errcode === 'number') {
    const primary = errcode & 0xff
    if (primary === SQLITE_FULL) return 'free space on its disk, then run this again'
    if (primary === SQLITE_READONLY || primary === SQLITE_IOERR) {
      return 'its file cannot be written (a failed disk, a read-only mount); commands that only read still work'
    }
    return 'another process holds it: try again in a moment'
  }
  if (code === '25006') {
    return 'it takes no writes (a standby, or default_transaction_read_only): point the database URL at the primary, or run this again once it takes writes'
  }
  if (code === '53100') return 'its server is out of disk space; free some, then run this again'
  return 'try again in a moment'
}
