/**
 * JSON as real webhook senders write it. Shell scripts and templating tools often put raw
 * line breaks and tabs inside JSON strings (`"text": "line one
 * line two"`), which RFC 8259 section 7 forbids. When strict parsing fails, raw control
 * characters inside string literals are escaped and parsing is tried once more; anything
 * else that is not JSON stays an error. A decoded NUL character is refused (400) like the
 * kit refuses it in every parsed body: the kit never sees what this parser decodes.
 */
import { refuseNul } from '@gatehouse/kit'

/** Escape U+0000..U+001F found inside string literals; linear, never throws. */
export function escapeControlCharsInStrings(text: string): string {
  let out = ''
  let inString = false
  let escaped = false
  let last = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (escaped) escaped = false
      else if (c === 0x5c) escaped = true
      else if (c === 0x22) inString = false
      else if (c < 0x20) {
        out += text.slice(last, i) + CONTROL_ESCAPES[c]
        last = i + 1
      }
    } else if (c === 0x22) inString = true
  }
  return last === 0 ? text : out + text.slice(last)
}

const CONTROL_ESCAPES: string[] = Array.from({ length: 0x20 }, (_, c) => {
  if (c === 0x0a) return '\\n'
  if (c === 0x0d) return '\\r'
  if (c === 0x09) return '\\t'
  return `\\u${c.toString(16).padStart(4, '0')}`
})

export class JsonError extends Error {
  override readonly name = 'JsonError'
}

/**
 * Parse JSON, tolerating raw control characters inside strings; throws JsonError, or the
 * kit's 400 `invalid_request` naming `where` when a decoded string holds U+0000.
 */
export function parseLenientJson(text: string, where = 'body'): unknown {
  const value = parse(text)
  refuseNul(value, where)
  return value
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch (first) {
    const repaired = escapeControlCharsInStrings(text)
    if (repaired !== text) {
      try {
        return JSON.parse(repaired)
      } catch {
        // report the original error below
      }
    }
    throw new JsonError((first as Error).message)
  }
}
