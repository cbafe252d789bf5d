/**
 * The common log format's time, `10/Oct/2000:13:55:36 -0700`, to epoch milliseconds,
 * without Date.parse (which does not accept this form) and without a regex per line.
 */
const MONTHS: Record<string, number> = {
  Jan: 0,
  Feb: 1,
  Mar: 2,
  Apr: 3,
  May: 4,
  Jun: 5,
  Jul: 6,
  Aug: 7,
  Sep: 8,
  Oct: 9,
  Nov: 10,
  Dec: 11,
}

function num(s: string, from: number, len: number): number {
  let n = 0
  for (let i = from; i < from + len; i++) {
    const c = s.charCodeAt(i) - 48
    if (c < 0 || c > 9) return Number.NaN
    n = n * 10 + c
  }
  return n
}

/** Parse `dd/Mon/yyyy:HH:MM:SS ±hhmm`; NaN when malformed. */
export function parseClfTime(s: string): number {
  if (s.length !== 26 || s[2] !== '/' || s[6] !== '/' || s[11] !== ':' || s[20] !== ' ') return Number.NaN
  const month = MONTHS[s.slice(3, 6)]
  if (month === undefined) return Number.NaN
  const day = num(s, 0, 2)
  const year = num(s, 7, 4)
  const h = num(s, 12, 2)
  const m = num(s, 15, 2)
  const sec = num(s, 18, 2)
  const sign = s[21] === '-' ? -1 : s[21] === '+' ? 1 : 0
  const oh = num(s, 22, 2)
  const om = num(s, 24, 2)
  if (sign === 0 || day < 1 || day > 31 || h > 23 || m > 59 || sec > 60 || oh > 23 || om > 59) return Number.NaN
  const utc = Date.UTC(year, month, day, h, m, sec)
  return utc - sign * (oh * 60 + om) * 60_000
}
