/**
 * TTL values: plain seconds or BIND/Knot unit form (`1h30m`, `2d`, `1W`).
 * RFC 2181 §8: a TTL is an unsigned value in 0..2^31-1.
 */
export const MAX_TTL = 2 ** 31 - 1

const UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400, w: 604800 }

/** Parse a TTL or SOA timer; returns undefined when the text is not a TTL at all. */
export function parseTtlText(text: string): number | undefined {
  if (/^\d+$/.test(text)) return Number(text)
  if (!/^(\d+[smhdwSMHDW])+$/.test(text)) return undefined
  let total = 0
  for (const m of text.matchAll(/(\d+)([smhdwSMHDW])/g)) total += Number(m[1]) * UNITS[m[2]!.toLowerCase()]!
  return total
}

export function isValidTtl(n: number): boolean {
  return Number.isSafeInteger(n) && n >= 0 && n <= MAX_TTL
}
