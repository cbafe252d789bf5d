/**
 * Credentials on an HTTP request: one cookie parser and one bearer-token parser for every app,
 * so a quirk (spaces, case, repeated names) is handled the same way everywhere.
 */

/**
 * The value of the first cookie called `name` in a `Cookie` header (RFC 6265 section 5.4), or
 * undefined. Surrounding spaces are ignored; a quoted value is unquoted.
 *
 * @example readCookie('a=1; session=abc', 'session') // 'abc'
 */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq === -1 || part.slice(0, eq).trim() !== name) continue
    const value = part.slice(eq + 1).trim()
    return value.length >= 2 && value.startsWith('"') && value.endsWith('"') ? value.slice(1, -1) : value
  }
  return undefined
}

// RFC 6750 section 2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i

/**
 * The token of an `Authorization: Bearer <token>` header: undefined when there is no header,
 * null when there is one that is not a well-formed bearer credential (another scheme, an empty
 * or malformed token), so the caller can answer 401 instead of trying other credentials.
 *
 * @example bearerToken('Bearer abc.def') // 'abc.def'
 */
export function bearerToken(header: string | undefined): string | undefined | null {
  if (header === undefined) return undefined
  const m = BEARER.exec(header.trim())
  return m ? m[1]! : null
}
