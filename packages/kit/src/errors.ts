/**
 * Coded errors shared by every Gatehouse service.
 *
 * An `AppError` carries an HTTP status, a stable snake_case `code` that clients match on,
 * a public `message`, and an optional `cause` that is only ever logged. Apps declare their
 * own codes with `defineErrors` in one `errors.ts` each.
 */
export interface AppErrorOptions {
  cause?: unknown
  /** Extra public fields merged into the JSON error object (never secrets). */
  details?: Record<string, unknown>
  /** Response headers to set with the error (e.g. `Retry-After`, `Allow`). */
  headers?: Record<string, string>
}

export class AppError extends Error {
  override readonly name = 'AppError'
  readonly statusCode: number
  readonly code: string
  readonly details: Record<string, unknown> | undefined
  readonly headers: Record<string, string> | undefined

  constructor(statusCode: number, code: string, message: string, options: AppErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.statusCode = statusCode
    this.code = code
    this.details = options.details
    this.headers = options.headers
  }

  /** The body every service answers with: `{"error":{"code","message",...details}}`. */
  toJSON(): { error: Record<string, unknown> } {
    return { error: { code: this.code, message: this.message, ...this.details } }
  }
}

/** `Retry-After` for an outage that is likely to pass (a database restarting, a store unreachable): 5 s. */
export const RETRY_SOON: Readonly<Record<string, string>> = { 'retry-after': '5' }

export interface ErrorDefinition<A extends unknown[]> {
  status: number
  message: (...args: A) => string
  /** Headers every error of this code carries (`Retry-After` on a passing outage); `.with` may add to them. */
  headers?: Record<string, string>
}

export type ErrorFactory<A extends unknown[]> = ((...args: A) => AppError) & {
  readonly code: string
  readonly status: number
  /** Build the error with a cause (logged, never sent) or public details. */
  with(options: AppErrorOptions, ...args: A): AppError
}

// biome-ignore lint/suspicious/noExplicitAny: the map's argument lists differ per entry
type Definitions = Record<string, ErrorDefinition<any>>

/**
 * Declare an app's error codes once; each key becomes the stable code.
 *
 * @example
 * export const errors = defineErrors({
 *   zone_not_found: { status: 404, message: (zone: string) => `zone ${zone} does not exist` },
 * })
 * throw errors.zone_not_found('example.test')
 */
export function defineErrors<const D extends Definitions>(
  definitions: D,
): { [K in keyof D]: ErrorFactory<Parameters<D[K]['message']>> } {
  const out: Record<string, ErrorFactory<unknown[]>> = {}
  for (const [code, def] of Object.entries(definitions)) {
    if (!/^[a-z][a-z0-9_]*$/.test(code)) throw new TypeError(`error code ${code} must be snake_case`)
    const make = (options: AppErrorOptions, args: unknown[]) =>
      new AppError(
        def.status,
        code,
        def.message(...args),
        def.headers ? { ...options, headers: { ...def.headers, ...options.headers } } : options,
      )
    const factory = (...args: unknown[]) => make({}, args)
    Object.defineProperties(factory, {
      code: { value: code, enumerable: true },
      status: { value: def.status, enumerable: true },
      with: { value: (options: AppErrorOptions, ...args: unknown[]) => make(options, args) },
    })
    out[code] = factory as ErrorFactory<unknown[]>
  }
  return out as { [K in keyof D]: ErrorFactory<Parameters<D[K]['message']>> }
}

/** The codes the kit itself answers with; apps add their own beside these. */
export const kitErrors = defineErrors({
  invalid_request: { status: 400, message: (what: string) => what },
  invalid_json: { status: 400, message: (why: string) => `request body is not valid JSON: ${why}` },
  unauthorized: { status: 401, message: (why = 'credentials are missing or invalid') => why },
  forbidden: { status: 403, message: (why = 'not allowed') => why },
  host_not_allowed: {
    status: 403,
    message: () => 'the Host header does not name this service (loopback or a configured name)',
  },
  not_found: { status: 404, message: (what = 'no such resource') => what },
  method_not_allowed: {
    status: 405,
    message: (method: string, path: string) => `method ${method} is not allowed on ${path}`,
  },
  conflict: { status: 409, message: (why: string) => why },
  payload_too_large: { status: 413, message: (limit: number) => `request body exceeds the limit of ${limit} bytes` },
  unsupported_media_type: { status: 415, message: (type: string) => `unsupported content type ${type}` },
  rate_limited: { status: 429, message: () => 'too many requests' },
  internal: { status: 500, message: () => 'internal error' },
  unavailable: { status: 503, message: (what: string) => `${what} is unavailable` },
})

/** Raised for operator mistakes at startup: printed as one line, no stack trace. */
export class StartupError extends Error {
  override readonly name: string = 'StartupError'
  readonly lines: string[]
  constructor(lines: string | string[], options?: { cause?: unknown }) {
    const list = Array.isArray(lines) ? lines : [lines]
    super(list.join('; '), options)
    this.lines = list
  }
}
