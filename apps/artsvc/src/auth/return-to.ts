/**
 * Where sign-in returns to. `return_to` comes from a link anyone can craft, so it is
 * resolved the way the browser will resolve the `Location` header (WHATWG URL parsing,
 * which drops tabs and line breaks: `/\t/evil.example` is `//evil.example`) against the
 * public origin, and kept only when it stays on that origin. The result is re-serialised
 * (path, query, fragment; percent-encoded), so no raw control character reaches a header.
 */

/** A same-origin path for the `Location` header; `/` for anything else. */
export function safeReturnTo(value: string | undefined, publicOrigin: string): string {
  if (!value) return '/'
  let url: URL
  let origin: string
  try {
    origin = new URL(publicOrigin).origin
    url = new URL(value, `${origin}/`)
  } catch {
    return '/'
  }
  if (url.origin !== origin) return '/'
  return `${url.pathname}${url.search}${url.hash}`
}
