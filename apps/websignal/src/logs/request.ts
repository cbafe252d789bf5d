/**
 * One parsed access-log request. `target` and `userAgent` are raw client-controlled text:
 * they are used in memory for matching only and never written anywhere (store, outbox,
 * logs, metrics). Only aggregates derived from them leave the parser's caller.
 */
export interface LogRequest {
  /** Client IP as written in the log (normalised later). */
  ip: string
  /** Host from the log (vhost / Host field), lower-cased; undefined when the format has none. */
  host: string | undefined
  /** Request target (path and query) as logged. In memory only. */
  target: string
  status: number
  /** User agent as logged. In memory only. */
  userAgent: string
  /** Milliseconds since the epoch; NaN when the line's time did not parse. */
  timeMs: number
}

/** A single line is bounded so a pathological line cannot exhaust memory (bytes). */
export const MAX_LINE_BYTES = 16 * 1024

export type LogFormat = 'combined' | 'vhost_combined' | 'json'

/** Result of parsing one line: the request, or undefined when the line did not match. */
export type LineParser = (line: string) => LogRequest | undefined
