/**
 * Normalisation of one domain name from a blocklist source: IDNA (UTS #46 via the WHATWG URL
 * host parser), lower case, no trailing dot, at least two labels, letters/digits/hyphen/underscore
 * only (underscore is common in tracker hostnames), 63-octet labels, 253 octets in all, and no
 * all-numeric top label (an IPv4 address is not a domain).
 */
import { domainToASCII } from 'node:url'

const NAME = /^(?:(?!-)[a-z0-9_-]{1,63}(?<!-)\.)+(?!-)[a-z0-9_-]{1,63}(?<!-)$/
const NUMERIC_TLD = /\.[0-9]+$/
const ASCII_PRINTABLE = /^[\x21-\x7e]+$/
const ASCII_OUTSIDE_NAMES = /[\x00-\x2c/\x3a-\x40\x5b-\x5e`\x7b-\x7f]/

/** Hosts-file names that name this machine, never something to block. */
export const LOCAL_NAMES = new Set([
  'localhost.localdomain',
  'local.localdomain',
  'ip6-localhost.localdomain',
  'localhost.localhost',
])

/**
 * The normalised name, or undefined when `raw` is not a usable domain name. Names of ASCII
 * letters, digits, `-`, `_` and dots (nearly every blocklist entry) are checked in one pass over
 * their characters; anything else takes the full path below (IDNA, then the same rules).
 */
export function normaliseName(raw: string): string | undefined {
  const end = raw.length > 0 && raw.charCodeAt(raw.length - 1) === 46 ? raw.length - 1 : raw.length
  if (end === 0 || end > 253) return undefined
  let labelStart = 0
  let labels = 1
  let digitsOnly = true
  let upper = false
  for (let i = 0; i < end; i++) {
    const c = raw.charCodeAt(i)
    if (c === 46) {
      // '.': the label before it must be 1-63 long and neither start nor end with '-'.
      if (!labelOk(raw, labelStart, i)) return undefined
      labels++
      labelStart = i + 1
      digitsOnly = true
    } else if (c >= 48 && c <= 57) {
      // digit
    } else if ((c >= 97 && c <= 122) || c === 45 || c === 95) digitsOnly = false
    else if (c >= 65 && c <= 90) {
      upper = true
      digitsOnly = false
    } else return normaliseSlow(raw)
  }
  if (labels < 2 || digitsOnly || !labelOk(raw, labelStart, end)) return undefined
  const name = end === raw.length ? raw : raw.slice(0, end)
  return upper ? name.toLowerCase() : name
}

function labelOk(s: string, from: number, to: number): boolean {
  const len = to - from
  return len >= 1 && len <= 63 && s.charCodeAt(from) !== 45 && s.charCodeAt(to - 1) !== 45
}

function normaliseSlow(raw: string): string | undefined {
  let name = raw.endsWith('.') ? raw.slice(0, -1) : raw
  if (name.length === 0 || name.length > 253) return undefined
  if (ASCII_PRINTABLE.test(name)) {
    name = name.toLowerCase()
  } else {
    // Non-ASCII: IDNA to the xn-- form; the URL parser returns '' for what it refuses. It would
    // also read `a.example/path` or `a.example x` as the host `a.example`: such text is refused.
    if (ASCII_OUTSIDE_NAMES.test(name)) return undefined
    name = domainToASCII(name)
    if (name === '') return undefined
  }
  if (name.length > 253 || !NAME.test(name) || NUMERIC_TLD.test(name)) return undefined
  return name
}
