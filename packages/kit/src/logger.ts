/**
 * JSON-lines logging through pino, with RFC 3339 UTC timestamps. In a terminal the
 * lines are rendered by pino-pretty instead (same fields, easier to read).
 */
import { randomUUID } from 'node:crypto'
import { type Logger, type LoggerOptions, pino } from 'pino'

export type { Logger } from 'pino'

export interface LoggerConfig {
  /** App name, logged as `app` on every line. */
  name: string
  level?: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent'
  /** Pretty output; defaults to whether stdout is a terminal. */
  pretty?: boolean
  /**
   * Write here instead of stdout (tests pass a stream to read the lines back; the gates pass
   * `stdoutDestination` with their batching).
   */
  destination?: NodeJS.WritableStream | StdoutDestination
}

/** Pino's asynchronous file-descriptor stream (sonic-boom). */
export type StdoutDestination = ReturnType<typeof pino.destination>

/** Log bytes waiting for standard output at most (`stdoutDestination`). */
const STDOUT_BUFFER_BYTES = 16 * 1024 * 1024

/** Destinations from `stdoutDestination`, whose dropped lines the logger reports. */
const bounded = new WeakSet<object>()

/**
 * Standard output for log lines, written asynchronously, with at most `maxBytes` waiting to be
 * written. Pino's own stdout buffers without limit: a reader that stops reading (a stalled log
 * collector, a paused terminal, `| less`) made a busy server grow until it ran out of memory,
 * faster for a gate logging every refused connection under a flood. Past the bound, lines are
 * dropped, and the logger says how many once output flows again.
 */
export function stdoutDestination(
  options: { minLength?: number; periodicFlush?: number; maxBytes?: number } = {},
): StdoutDestination {
  const { maxBytes = STDOUT_BUFFER_BYTES, ...batching } = options
  const destination = pino.destination({ dest: 1, sync: false, maxLength: maxBytes, ...batching })
  bounded.add(destination)
  return destination
}

/** Count the lines a bounded destination drops and log their number once it has caught up. */
function reportDrops(destination: StdoutDestination, logger: Logger): void {
  let dropped = 0
  destination.on('drop', () => {
    dropped++
  })
  destination.on('drain', () => {
    if (dropped === 0) return
    const lines = dropped
    dropped = 0
    logger.warn({ dropped: lines }, 'log lines dropped: standard output was not read fast enough')
  })
}

/** Keys whose values are never written, wherever they appear one level deep. */
const REDACT = [
  'authorization',
  'cookie',
  'password',
  'token',
  'secret',
  '*.authorization',
  '*.cookie',
  '*.password',
  '*.token',
  '*.secret',
  'req.headers.authorization',
  'req.headers.cookie',
]

/**
 * Create the app's root logger.
 *
 * @example const log = createLogger({ name: 'dnsctl' }); log.info({ zone }, 'zone published')
 */
export function createLogger(config: LoggerConfig): Logger {
  const options: LoggerOptions = {
    level: config.level ?? 'info',
    base: { app: config.name },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: REDACT, censor: '[redacted]' },
    formatters: { level: (label) => ({ level: label }) },
    // Errors under `cause` (the logged-only half of an AppError) would otherwise serialise to `{}`.
    serializers: { err: pino.stdSerializers.err, cause: pino.stdSerializers.err },
  }
  const pretty = config.pretty ?? (config.destination === undefined && process.stdout.isTTY === true)
  if (pretty) {
    return pino({
      ...options,
      transport: { target: 'pino-pretty', options: { translateTime: 'UTC:isoDateTime', ignore: 'pid,hostname,app' } },
    })
  }
  const destination = config.destination ?? stdoutDestination()
  const logger = pino(options, destination as pino.DestinationStream)
  if (bounded.has(destination)) reportDrops(destination as StdoutDestination, logger)
  return logger
}

const unredacted = new WeakMap<Logger, Logger>()

/**
 * A child of `logger` without the redaction pass, for hot lines whose fields are fixed and carry
 * no secret (the HTTP access line, a gate's per-connection line): redaction more than doubles
 * the cost of a line. Every other line keeps it.
 */
export function fixedFieldLogger(logger: Logger): Logger {
  let child = unredacted.get(logger)
  if (child === undefined) {
    child = logger.child({}, { redact: { paths: [] } })
    unredacted.set(logger, child)
  }
  return child
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/** Use the caller's `X-Request-Id` when it is sane, else a fresh UUID. */
export function requestIdFrom(header: string | string[] | undefined): string {
  return typeof header === 'string' && REQUEST_ID.test(header) ? header : randomUUID()
}
