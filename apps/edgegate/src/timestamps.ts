/**
 * RFC 3339 UTC timestamps on the wire; integers in the database. Decision times carry
 * microseconds (the decision clock's unit), everything else milliseconds.
 */
const RFC3339_UTC = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?Z$/

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

function daysIn(year: number, month: number): number {
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)
  return month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1]!
}

// Observation pages repeat the same few timestamps many times: remember recent answers.
const cache = new Map<string, number | undefined>()

/** Microseconds since the epoch, or undefined when the text is not a real RFC 3339 UTC instant. */
export function parseMicros(text: string): number | undefined {
  if (typeof text !== 'string') return undefined
  if (cache.has(text)) return cache.get(text)
  const value = parse(text)
  if (cache.size >= 10_000) cache.clear()
  if (text.length <= 40) cache.set(text, value)
  return value
}

function parse(text: string): number | undefined {
  const m = RFC3339_UTC.exec(text)
  if (!m) return undefined
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number]
  if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) || h > 23 || mi > 59 || s > 59) return undefined
  const micros = m[7] ? Number(m[7].padEnd(6, '0').slice(0, 6)) : 0
  return Date.UTC(y, mo - 1, d, h, mi, s) * 1000 + micros
}

/** Milliseconds since the epoch (fraction below a millisecond dropped), or undefined. */
export function parseMillis(text: string): number | undefined {
  const us = parseMicros(text)
  return us === undefined ? undefined : Math.floor(us / 1000)
}

/** `2026-11-22T05:19:26.123Z` */
export function formatMillis(ms: number): string {
  return new Date(ms).toISOString()
}

/** `2026-11-22T05:19:26.123456Z`: six fraction digits, so decision times keep their order. */
export function formatMicros(us: number): string {
  const ms = Math.floor(us / 1000)
  const iso = new Date(ms).toISOString()
  return `${iso.slice(0, 23)}${String(us % 1000).padStart(3, '0')}Z`
}
