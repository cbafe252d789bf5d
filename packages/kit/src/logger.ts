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
  /** Write here instead of stdout (tests pass a stream to read the lines back). */
  destination?: NodeJS.WritableStream
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
  return config.destination ? pino(options, config.destination as pino.DestinationStream) : pino(options)
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
