/**
 * One duration syntax for every flag, variable and config file: a sequence of
 * `<integer><unit>` with units `ms`, `s`, `m`, `h` (largest first, each at most once),
 * e.g. `500ms`, `30s`, `15m`, `12h`, `168h`, `1h30m`. Values are milliseconds.
 */
const UNITS: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1 }
const ORDER = ['h', 'm', 's', 'ms']
const PART = /(\d+)(ms|h|m|s)/y

export class DurationError extends Error {
  override readonly name = 'DurationError'
}

/**
 * Parse a duration to milliseconds.
 *
 * @example parseDuration('1h30m') // 5_400_000
 */
export function parseDuration(text: string): number {
  const input = text.trim()
  if (input === '') throw new DurationError(`empty duration ${EXAMPLES}`)
  if (input === '0') return 0
  let total = 0
  let lastUnit = -1
  PART.lastIndex = 0
  while (PART.lastIndex < input.length) {
    const at = PART.lastIndex
    const m = PART.exec(input)
    if (!m) throw new DurationError(invalid(text, input.slice(at), at === 0))
    const unit = ORDER.indexOf(m[2]!)
    if (unit <= lastUnit) {
      throw new DurationError(
        `invalid duration ${JSON.stringify(text)}: units must go from largest to smallest, once each`,
      )
    }
    lastUnit = unit
    total += Number(m[1]) * UNITS[m[2]!]!
  }
  if (!Number.isSafeInteger(total)) throw new DurationError(`duration ${JSON.stringify(text)} is too large`)
  return total
}

const EXAMPLES = '(use e.g. 500ms, 30s, 15m, 12h, 1h30m)'

/** Why `text` is not a duration, from the part that did not parse (`rest`). */
function invalid(text: string, rest: string, whole: boolean): string {
  const shown = JSON.stringify(text)
  // Days and weeks are what people write for expiries: say the hours they mean.
  const days = /^(\d+)(d|w)$/.exec(rest)
  if (days) {
    const hours = Number(days[1]) * (days[2] === 'd' ? 24 : 168)
    return `invalid duration ${shown}: the largest unit is h, so ${days[1]}${days[2]} is ${hours}h`
  }
  return whole
    ? `invalid duration ${shown} ${EXAMPLES}`
    : `invalid duration ${shown} at ${JSON.stringify(rest)} ${EXAMPLES}`
}

/**
 * Render milliseconds in the same syntax, largest units first.
 *
 * @example formatDuration(5_400_000) // '1h30m'
 */
export function formatDuration(ms: number): string {
  if (!Number.isSafeInteger(ms) || ms < 0) throw new TypeError(`cannot format duration ${ms}`)
  if (ms === 0) return '0s'
  let rest = ms
  let out = ''
  for (const unit of ORDER) {
    const size = UNITS[unit]!
    const n = Math.floor(rest / size)
    if (n > 0) {
      out += `${n}${unit}`
      rest -= n * size
    }
  }
  return out
}

const SIZE_UNITS: Record<string, number> = {
  '': 1,
  b: 1,
  kb: 1000,
  mb: 1000 ** 2,
  gb: 1000 ** 3,
  kib: 1024,
  mib: 1024 ** 2,
  gib: 1024 ** 3,
}

/**
 * Parse a byte size: a plain integer or one with a unit (`KB`, `MB`, `GB`, `KiB`, `MiB`, `GiB`).
 *
 * @example parseByteSize('25MiB') // 26_214_400
 */
export function parseByteSize(text: string): number {
  const m = /^(\d+)\s*([a-z]*)$/i.exec(text.trim())
  const factor = m ? SIZE_UNITS[m[2]!.toLowerCase()] : undefined
  if (!m || factor === undefined) {
    throw new DurationError(`invalid size ${JSON.stringify(text)} (use e.g. 1048576, 512KiB, 25MiB, 1GB)`)
  }
  const n = Number(m[1]) * factor
  if (!Number.isSafeInteger(n)) throw new DurationError(`size ${JSON.stringify(text)} is too large`)
  return n
}
