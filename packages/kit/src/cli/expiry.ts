/**
 * `--expires-in <duration>` or `--expires-at <time>` on a command that creates something for a
 * while (an artsvc share link, a notify reader token): one rule for every app, checked before
 * anything is sent or written, so a mistyped time is a usage error (exit 2) that changes nothing.
 */
import { DurationError, parseDuration } from '../durations.ts'
import { parseTimestampMillis } from '../timestamps.ts'
import { UsageError } from './program.ts'

export interface ExpiryOptions {
  expiresIn?: string
  expiresAt?: string
}

/** The shortest `--expires-in`: anything shorter is a typo (`30s` for `30d`). */
export const MIN_EXPIRY_MS = 60_000

/**
 * The expiry as UTC ISO text (`toISOString`): `--expires-in` counted from `now`, or
 * `--expires-at` (any RFC 3339 offset) when it lies in the future. Undefined when neither is
 * given: the thing never expires.
 *
 * @example expiryOf({ expiresIn: '168h' }) // a week from now
 */
export function expiryOf(o: ExpiryOptions, now = Date.now()): string | undefined {
  if (o.expiresIn !== undefined && o.expiresAt !== undefined) {
    throw new UsageError('give --expires-in or --expires-at, not both')
  }
  if (o.expiresIn !== undefined) {
    let ms: number
    try {
      ms = parseDuration(o.expiresIn)
    } catch (e) {
      if (e instanceof DurationError) throw new UsageError(`--expires-in: ${e.message}`)
      throw e
    }
    if (ms < MIN_EXPIRY_MS) throw new UsageError(`--expires-in must be at least 1m, got ${JSON.stringify(o.expiresIn)}`)
    return new Date(now + ms).toISOString()
  }
  if (o.expiresAt !== undefined) {
    const at = parseTimestampMillis(o.expiresAt)
    if (at === undefined) {
      throw new UsageError(
        `--expires-at must be an RFC 3339 time such as 2027-01-31T00:00:00Z, got ${JSON.stringify(o.expiresAt)}`,
      )
    }
    if (at <= now) throw new UsageError(`--expires-at ${o.expiresAt} is in the past`)
    return new Date(at).toISOString()
  }
  return undefined
}
