/**
 * Domain names in presentation form. We accept the host-name-like subset that real zones
 * use (letters, digits, `-`, `_`, a leading `*` label) and keep names absolute, lower-case
 * and with the trailing dot. Escaped bytes in names (`\.`, `\DDD`) are refused: Knot would
 * accept them, but they are almost always a typo and they make names ambiguous to read.
 */
const LABEL = /^[a-z0-9_-]{1,63}$/
/** RFC 1035 §3.1: a name is at most 255 octets in wire form. */
const MAX_WIRE_LENGTH = 255

export class NameError extends Error {
  override readonly name = 'NameError'
}

/**
 * Resolve a name as written in zone text against `origin` (absolute, with trailing dot):
 * `@` is the origin, a name without a trailing dot is relative to it.
 */
export function resolveName(written: string, origin: string): string {
  if (written === '') throw new NameError('empty name')
  if (written === '@') return origin
  if (written.includes('\\')) throw new NameError(`escapes are not supported in names: ${JSON.stringify(written)}`)
  let absolute: string
  if (written === '.') absolute = '.'
  else if (written.endsWith('.')) absolute = written
  else absolute = origin === '.' ? `${written}.` : `${written}.${origin}`
  return checkName(absolute.toLowerCase(), written)
}

/** Characters a label may hold: a-z, 0-9, "-" and "_" (names are lower-cased before). */
const LABEL_CHAR = new Uint8Array(128)
for (const c of 'abcdefghijklmnopqrstuvwxyz0123456789-_') LABEL_CHAR[c.charCodeAt(0)] = 1

/** Validate an absolute lower-case name; returns it. One pass over the characters (hot: every name of a zone). */
export function checkName(name: string, written = name): string {
  if (name === '.') return name
  const end = name.length - 1 // the trailing dot
  let start = 0
  for (let i = 0; i <= end; i++) {
    const c = name.charCodeAt(i)
    if (c !== 0x2e) {
      if (c >= 128 || LABEL_CHAR[c] === 0) {
        if (!(c === 0x2a && i === start && (i + 1 === end + 1 || name.charCodeAt(i + 1) === 0x2e))) {
          return labelError(name, written)
        }
      }
      continue
    }
    const length = i - start
    if (length === 0) throw new NameError(`empty label in ${JSON.stringify(written)}`)
    if (length > 63) throw new NameError(`label longer than 63 characters in ${JSON.stringify(written)}`)
    if (length === 1 && name.charCodeAt(start) === 0x2a && start !== 0) {
      throw new NameError(`a wildcard * must be the leftmost label in ${JSON.stringify(written)}`)
    }
    start = i + 1
  }
  // Wire form: a length octet per label plus the root octet, i.e. the text length plus one.
  if (name.length + 1 > MAX_WIRE_LENGTH) throw new NameError(`name longer than 255 octets: ${JSON.stringify(written)}`)
  return name
}

/** The precise error for a name with a character outside the label alphabet. */
function labelError(name: string, written: string): never {
  const labels = name.slice(0, -1).split('.')
  for (let i = 0; i < labels.length; i++) {
    const label = labels[i]!
    if (label === '') throw new NameError(`empty label in ${JSON.stringify(written)}`)
    if (label === '*') {
      if (i !== 0) throw new NameError(`a wildcard * must be the leftmost label in ${JSON.stringify(written)}`)
    } else if (!LABEL.test(label)) {
      if (label.length > 63) throw new NameError(`label longer than 63 characters in ${JSON.stringify(written)}`)
      throw new NameError(
        `invalid character in ${JSON.stringify(written)} (names use letters, digits, "-", "_" and a leading "*")`,
      )
    }
  }
  throw new NameError(`invalid character in ${JSON.stringify(written)}`)
}

/** Whether `name` is `origin` or below it. */
export function isInZone(name: string, origin: string): boolean {
  if (origin === '.' || name === origin) return true
  // name ends with "." + origin, without building that string (called once per record).
  const at = name.length - origin.length - 1
  return at >= 0 && name.charCodeAt(at) === 0x2e && name.endsWith(origin)
}

/** The name relative to `origin` (`@` for the origin itself), for readable output. */
export function relativeName(name: string, origin: string): string {
  if (name === origin) return '@'
  if (origin !== '.' && isInZone(name, origin)) return name.slice(0, -origin.length - 1)
  return name
}

/**
 * RFC 4034 §6.1 canonical order of two absolute lower-case names: labels compared right to
 * left, a name before its subdomains. Walks the strings in place: sorting a large zone calls
 * this millions of times.
 */
export function compareNames(a: string, b: string): number {
  if (a === b) return 0
  // ea/eb: index of the dot ending the current label (the trailing dot first).
  let ea = a.length - 1
  let eb = b.length - 1
  for (;;) {
    if (ea <= 0 || eb <= 0) return ea <= 0 ? (eb <= 0 ? 0 : -1) : 1
    const sa = a.lastIndexOf('.', ea - 1) + 1
    const sb = b.lastIndexOf('.', eb - 1) + 1
    const la = ea - sa
    const lb = eb - sb
    const n = la < lb ? la : lb
    for (let k = 0; k < n; k++) {
      const d = a.charCodeAt(sa + k) - b.charCodeAt(sb + k)
      if (d !== 0) return d < 0 ? -1 : 1
    }
    if (la !== lb) return la < lb ? -1 : 1
    ea = sa === 0 ? -1 : sa - 1
    eb = sb === 0 ? -1 : sb - 1
  }
}
