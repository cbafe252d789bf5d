/**
 * The one error type of the zone text modules. `code` is the API error code the service
 * answers with (see ../errors.ts); `line` is the 1-based line of zone text, when known.
 */
export type ZoneErrorCode =
  | 'invalid_zone_text'
  | 'invalid_record'
  | 'invalid_ttl'
  | 'unsupported_type'
  | 'non_internet_class'
  | 'include_refused'
  | 'name_outside_zone'
  | 'duplicate_record'
  | 'cname_conflict'
  | 'apex_violation'

export class ZoneError extends Error {
  override readonly name = 'ZoneError'
  readonly code: ZoneErrorCode
  readonly line: number | undefined

  constructor(code: ZoneErrorCode, message: string, line?: number) {
    super(line === undefined ? message : `line ${line}: ${message}`)
    this.code = code
    this.line = line
  }
}
