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

/** Validate an absolute lower-case name; returns it. */
export function checkName(name: string, written = name): string {
  if (name === '.') return name
  const labels = name.slice(0, -1).split('.')
  let wire = 1
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
    wire += label.length + 1
  }
  if (wire > MAX_WIRE_LENGTH) throw new NameError(`name longer than 255 octets: ${JSON.stringify(written)}`)
  return name
}

/** Whether `name` is `origin` or below it. */
export function isInZone(name: string, origin: string): boolean {
  return origin === '.' || name === origin || name.endsWith(`.${origin}`)
}

/** The name relative to `origin` (`@` for the origin itself), for readable output. */
export function relativeName(name: string, origin: string): string {
  if (name === origin) return '@'
  if (origin !== '.' && name.endsWith(`.${origin}`)) return name.slice(0, -origin.length - 1)
  return name
}

/**
 * RFC 4034 §6.1 canonical order of two absolute lower-case names: labels compared right to
 * left, a name before its subdomains. Walks the strings without splitting them.
 */
export function compareNames(a: string, b: string): number {
  if (a === b) return 0
  let ea = a.length - 1
  let eb = b.length - 1
  for (;;) {
    if (ea <= 0 || eb <= 0) return ea <= 0 ? (eb <= 0 ? 0 : -1) : 1
    const sa = a.lastIndexOf('.', ea - 1) + 1
    const sb = b.lastIndexOf('.', eb - 1) + 1
    const la = a.slice(sa, ea)
    const lb = b.slice(sb, eb)
    if (la !== lb) return la < lb ? -1 : 1
    ea = sa === 0 ? -1 : sa - 1
    eb = sb === 0 ? -1 : sb - 1
  }
}
