/**
 * Text from users on an operator's terminal. A label, a host name or a message can carry
 * escape sequences (ESC `[2J`, OSC 52 clipboard writes, a fake prompt after a carriage
 * return) or bidirectional overrides that reorder what is shown; a CLI prints such text
 * only through `escapeTerminal`, and names that end up there are refused at the source
 * with `hasControlCharacter`.
 */

// C0 controls, DEL, C1 controls (0x80-0x9f: 0x9b is a one-byte CSI on some terminals),
// the bidirectional embeddings, overrides and isolates, and line/paragraph separators.
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/
const CONTROL_ALL = new RegExp(CONTROL.source, 'g')

const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t', '\u001b': '\\e' }

/**
 * True when `text` holds a character that moves the cursor, starts an escape sequence or
 * reorders text on a terminal.
 *
 * @example hasControlCharacter('ops laptop') // false; hasControlCharacter('\u001b[2J') // true
 */
export function hasControlCharacter(text: string): boolean {
  return CONTROL.test(text)
}

/**
 * `text` with every control, escape and bidirectional-override character shown as a
 * visible escape (`\e`, `\n`, `\x07`, `\u202e`), so it prints as one inert line.
 *
 * @example escapeTerminal('evil\u001b[2J') === 'evil\\e[2J'
 */
export function escapeTerminal(text: string): string {
  if (!CONTROL.test(text)) return text
  return text.replace(CONTROL_ALL, (c) => {
    const named = NAMED[c]
    if (named) return named
    const code = c.charCodeAt(0)
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`
  })
}

// What JSON.stringify leaves raw but a terminal may act on (it escapes C0 already).
const JSON_UNSAFE = /[\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g

/**
 * `JSON.stringify(value, null, space)` that is also safe to print: DEL, C1 controls and
 * bidirectional overrides, which JSON leaves raw, are written as `\uXXXX` escapes, so
 * the text is still the same JSON.
 *
 * @example terminalJson({ label: 'a\u009bb' }) === '{"label":"a\\u009bb"}'
 */
export function terminalJson(value: unknown, space?: number): string {
  return JSON.stringify(value, null, space).replace(
    JSON_UNSAFE,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  )
}
