/**
 * RFC 1035 §5.1 master file lexer: splits zone text into logical entries (one per line,
 * parentheses joining lines), dropping comments. Escapes are kept verbatim in the token
 * text; the consumers (names, character-strings) decode what they accept.
 */
import { ZoneError } from './errors.ts'

export interface Token {
  /** Token text with quotes removed and escapes kept as written (`\.`, `\065`). */
  text: string
  quoted: boolean
}

export interface Entry {
  /** 1-based line where the entry starts. */
  line: number
  /** The line started with a blank: the owner is the previous record's owner. */
  blankOwner: boolean
  tokens: Token[]
}

function isControl(code: number): boolean {
  return (code < 0x20 && code !== 0x09) || code === 0x7f
}

/** Split zone text into entries; throws `ZoneError` (invalid_zone_text) with the line number. */
export function lex(text: string): Entry[] {
  const entries: Entry[] = []
  let line = 1
  let depth = 0
  let parenLine = 0
  let current: Entry | undefined
  let atLineStart = true
  // A byte-order mark some editors put first is not part of the zone.
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0
  const n = text.length

  const push = (token: Token) => {
    if (!current) {
      current = { line, blankOwner: false, tokens: [] }
    }
    current.tokens.push(token)
  }
  const endEntry = () => {
    if (current && current.tokens.length > 0) entries.push(current)
    current = undefined
  }

  while (i < n) {
    const c = text[i]!
    if (c === '\n') {
      line++
      i++
      if (depth === 0) {
        endEntry()
        atLineStart = true
      }
      continue
    }
    if (c === '\r' && text[i + 1] === '\n') {
      i++
      continue
    }
    if (c === ' ' || c === '\t') {
      if (atLineStart && depth === 0) {
        current = { line, blankOwner: true, tokens: [] }
      }
      atLineStart = false
      i++
      continue
    }
    atLineStart = false
    if (c === ';') {
      while (i < n && text[i] !== '\n') i++
      continue
    }
    if (c === '(') {
      if (depth === 0) parenLine = line
      depth++
      if (!current) current = { line, blankOwner: false, tokens: [] }
      i++
      continue
    }
    if (c === ')') {
      if (depth === 0) throw new ZoneError('invalid_zone_text', 'closing parenthesis without an opening one', line)
      depth--
      i++
      continue
    }
    if (c === '"') {
      const start = line
      const from = i + 1
      i++
      for (;;) {
        if (i >= n) throw new ZoneError('invalid_zone_text', 'unterminated quoted string', start)
        const q = text.charCodeAt(i)
        if (q === 0x22) break
        if (q === 0x0a || q === 0x0d) {
          throw new ZoneError('invalid_zone_text', 'line break inside a quoted string', start)
        }
        if (isControl(q)) throw new ZoneError('invalid_zone_text', 'control character inside a quoted string', start)
        if (q === 0x5c) {
          const next = text.charCodeAt(i + 1)
          if (Number.isNaN(next) || next === 0x0a || next === 0x0d) {
            throw new ZoneError('invalid_zone_text', 'backslash at the end of a line', start)
          }
          i += 2
          continue
        }
        i++
      }
      // Escapes stay as written: the token is the raw text between the quotes.
      push({ text: text.slice(from, i), quoted: true })
      i++
      continue
    }
    // An unquoted token runs to the next blank, newline, parenthesis, quote or comment.
    const from = i
    while (i < n) {
      const t = text.charCodeAt(i)
      // space, tab, LF, CR, ( ) ; "
      if (
        t === 0x20 ||
        t === 0x09 ||
        t === 0x0a ||
        t === 0x0d ||
        t === 0x28 ||
        t === 0x29 ||
        t === 0x3b ||
        t === 0x22
      ) {
        break
      }
      if (isControl(t)) throw new ZoneError('invalid_zone_text', 'control character in zone text', line)
      if (t === 0x5c) {
        const next = text.charCodeAt(i + 1)
        if (Number.isNaN(next) || next === 0x0a || next === 0x0d) {
          throw new ZoneError('invalid_zone_text', 'backslash at the end of a line', line)
        }
        i += 2
        continue
      }
      i++
    }
    if (i === from && text[i] === '\r') {
      i++
      continue
    }
    push({ text: text.slice(from, i), quoted: false })
  }
  if (depth > 0) throw new ZoneError('invalid_zone_text', 'parenthesis opened here is never closed', parenLine)
  endEntry()
  return entries
}

/** Tokens of one record value given on its own (API changes): a single line, no comments needed. */
export function lexRecord(text: string): Token[] {
  if (/[\r\n]/.test(text)) throw new ZoneError('invalid_record', 'a record value must be a single line')
  const entries = lex(text)
  if (entries.length === 0) throw new ZoneError('invalid_record', 'empty record value')
  return entries[0]!.tokens
}
