/** Choose the line parser of an input: format, optional syslog envelope, JSON field names. */
import { parseCombined, parseVhostCombined } from './combined.ts'
import { type JsonFields, jsonParser } from './json.ts'
import type { LineParser, LogFormat } from './request.ts'
import { unwrapSyslog } from './syslog.ts'

export interface ParserOptions {
  format: LogFormat
  /** The lines are wrapped in an RFC 5424/3164 syslog envelope. */
  syslog?: boolean
  jsonFields?: Partial<JsonFields>
}

export const LOG_FORMATS = ['combined', 'vhost_combined', 'json'] as const

export function makeParser(o: ParserOptions): LineParser {
  const inner =
    o.format === 'combined'
      ? parseCombined
      : o.format === 'vhost_combined'
        ? parseVhostCombined
        : jsonParser(o.jsonFields)
  if (!o.syslog) return inner
  return (line) => {
    const msg = unwrapSyslog(line)
    return msg === undefined ? undefined : inner(msg)
  }
}
