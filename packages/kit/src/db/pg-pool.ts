/**
 * PostgreSQL connections for `openDatabase`: node-postgres's pool as Kysely's dialect, and
 * `connect()` for a session of its own, with the same settings (`listen()` keeps one LISTENing). This is where a
 * server going away is handled: a bounded connect, TCP keep-alive, errors of checked-out
 * clients that would otherwise crash the process, connections that met a server going away
 * destroyed instead of reused, and errors marked so a request answers 503 (`unavailable.ts`).
 * Loaded only when the URL is PostgreSQL's.
 */
import { type Dialect, PostgresDialect, type PostgresPoolClient } from 'kysely'
import pg from 'pg'
import { DurationError, parseDuration } from '../durations.ts'
import { StartupError } from '../errors.ts'
import { type ListenHandlers, type ListenSession, listenOn } from './pg-listen.ts'
import { namingClient, prepareOption } from './pg-prepared.ts'
import { isDatabaseUnavailable, markUnavailable } from './unavailable.ts'

export interface PostgresPoolOptions {
  poolSize?: number
  connectTimeoutMs?: number
  queryTimeoutMs?: number
}

/** How long a pooled query may wait for an answer (ms, 0: for ever); set once migrations are done. */
interface QueryDeadline {
  ms: number
}

/** The pool for `location` (a postgres:// URL, the kit's own options still in it). */
export function openPostgresPool(
  location: string,
  options: PostgresPoolOptions,
): {
  dialect: Dialect
  connect: () => Promise<pg.Client>
  listen: (channel: string, handlers: ListenHandlers) => Promise<ListenSession>
  /** Bound every pooled query from now on by `queryTimeoutMs` (migrations may take longer). */
  startQueryDeadline: () => void
} {
  // int8 and numeric come back as strings by default; our counters and timestamps fit in
  // a double, so parse int8 as a number (values beyond 2^53 are refused by the schemas).
  pg.types.setTypeParser(20, (v) => Number(v))
  const { connectionString: withTimeout, prepare: named } = prepareOption(location)
  const { connectionString, queryTimeoutMs } = queryTimeoutOption(withTimeout)
  const clientConfig = {
    connectionString,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
    // Probes after 30 s idle (the kernel's default waits two hours): a server gone without
    // a word (a host down, a dropped NAT entry) is noticed within minutes.
    keepAlive: true,
    keepAliveInitialDelayMillis: 30_000,
  }
  const pool = new pg.Pool({
    Client: named ? namingClient(pg.Client) : pg.Client,
    ...clientConfig,
    max: options.poolSize ?? 10,
    idleTimeoutMillis: 30_000,
  })
  const connect = async () => {
    const client = new pg.Client(clientConfig)
    await client.connect().catch((err: unknown) => {
      throw markUnavailable(err)
    })
    return client
  }
  // A client losing its server must not crash the process. The pool listens only while a
  // client is idle; one checked out (a query in flight when the server restarts) would emit
  // an unhandled 'error'. Its query rejects anyway, and the pool drops it on release. The
  // listener also marks the error: node-postgres emits it before it rejects the queries
  // with that same error, so a socket's ECONNRESET reads as an unavailable database.
  pool.on('error', () => {})
  pool.on('connect', (client) => client.on('error', markUnavailable))
  // Sessions still open when the database closes are closed with it: their sockets would keep
  // the process alive.
  const sessions = new Set<ListenSession>()
  let ended = false
  const listen = async (channel: string, handlers: ListenHandlers): Promise<ListenSession> => {
    const session = await listenOn(connect, channel, handlers)
    // The database closed during the first attempt: so does the session.
    if (ended) await session.close()
    else sessions.add(session)
    return {
      get listening() {
        return session.listening
      },
      close: async () => {
        sessions.delete(session)
        await session.close()
      },
    }
  }
  const end = async () => {
    ended = true
    await Promise.all([...sessions].map((session) => session.close()))
    sessions.clear()
    await pool.end()
  }
  const deadline: QueryDeadline = { ms: 0 }
  const dialect = new PostgresDialect({ pool: { connect: () => checkout(pool, deadline), end } })
  const startQueryDeadline = () => {
    deadline.ms = queryTimeoutMs ?? options.queryTimeoutMs ?? 60_000
  }
  return { dialect, connect, listen, startQueryDeadline }
}

/**
 * `?query_timeout=` in the database URL: the pooled queries' deadline (`queryTimeoutMs`), so an
 * operator can set it in any app's URL. A duration (`90s`, `2m`; `0`: none), or milliseconds as
 * node-postgres reads the same parameter. Removed from the URL: node-postgres would apply its own
 * timeout too, which fails the query but keeps the socket (see `checkout`).
 */
export function queryTimeoutOption(url: string): { connectionString: string; queryTimeoutMs?: number } {
  const parsed = new URL(url)
  const value = parsed.searchParams.get('query_timeout')
  if (value === null) return { connectionString: url }
  let ms: number
  try {
    ms = /^\d+$/.test(value) ? Number(value) : parseDuration(value)
  } catch (err) {
    if (!(err instanceof DurationError)) throw err
    throw new StartupError(`database URL: query_timeout=${value}: ${err.message}`)
  }
  parsed.searchParams.delete('query_timeout')
  return { connectionString: parsed.toString(), queryTimeoutMs: ms }
}

/**
 * A pooled PostgreSQL connection for Kysely. A failed connection attempt is marked, so a request
 * that needed one answers 503. A connection whose query failed because the server is going away
 * (a FATAL shutdown message arrives before the socket closes) is destroyed on release instead of
 * going back to the pool, where the next request would take it and fail once more.
 *
 * A query with no answer within the deadline ends its connection's socket: the server has gone
 * silent (a host down, a partition, a failover to another address), and TCP alone would hold
 * the connection for its retransmission timeout, about 15 minutes, or for ever while the host
 * still acknowledges. node-postgres's own `query_timeout` fails the query but keeps the socket,
 * and the ROLLBACK that follows in a transaction would wait behind it just as long.
 */
async function checkout(pool: pg.Pool, deadline: QueryDeadline): Promise<PostgresPoolClient> {
  let client: pg.PoolClient
  try {
    client = await pool.connect()
  } catch (err) {
    throw markUnavailable(err)
  }
  let lost = false
  return {
    query: ((text: unknown, values?: unknown) => {
      // The connection is destroyed on release, and its transaction with it: a ROLLBACK would fail
      // (or wait for the silent server), and Kysely would throw that in place of the error that
      // ended the transaction.
      if (lost && text === 'rollback') return Promise.resolve({ command: 'ROLLBACK', rowCount: null, rows: [] })
      const result = client.query(text as string, values as unknown[])
      // A cursor (Kysely's streaming) is not a promise: it reports its own errors.
      if (!(result instanceof Promise)) return result
      const ms = deadline.ms
      const timer =
        ms > 0
          ? setTimeout(() => {
              lost = true
              const socket = (client as unknown as { connection?: { stream?: { destroy(err: Error): void } } })
                .connection?.stream
              socket?.destroy(markUnavailable(new Error(`the database did not answer within ${ms} ms`)) as Error)
            }, ms)
          : undefined
      return result.then(
        (rows) => {
          clearTimeout(timer)
          return rows
        },
        (err: unknown) => {
          clearTimeout(timer)
          if (isDatabaseUnavailable(err)) lost = true
          throw err
        },
      )
    }) as unknown as PostgresPoolClient['query'],
    release: () => client.release(lost || undefined),
  }
}
