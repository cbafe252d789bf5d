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

/** Hosts-file names that name this machine, never something to block. */
export const LOCAL_NAMES = new Set([
  'localhost.localdomain',
  'local.localdomain',
  'ip6-localhost.localdomain',
  'localhost.localhost',
])

/** The normalised name, or undefined when `raw` is not a usable domain name. */
export function normaliseName(raw: string): string | undefined {
  let name = raw.endsWith('.') ? raw.slice(0, -1) : raw
  if (name.length === 0 || name.length > 253) return undefined
  if (ASCII_PRINTABLE.test(name)) {
    name = name.toLowerCase()
  } else {
    // Non-ASCII: IDNA to the xn-- form; the URL parser returns '' for what it refuses.
    name = domainToASCII(name)
    if (name === '') return undefined
  }
  if (name.length > 253 || !NAME.test(name) || NUMERIC_TLD.test(name)) return undefined
  return name
}
