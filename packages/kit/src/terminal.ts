/**
 * Text from users (labels, names, log lines) printed on a terminal: control characters would
 * let it move the cursor, rewrite earlier lines or change the window title (ANSI escapes), so
 * they are shown as visible escapes instead.
 */

/**
 * Replace C0/C1 control characters (except tab and newline when `multiline`) and DEL with
 * `\xNN`/`\u{NNNN}` escapes, and the backslash that starts them with `\\`, so the output is
 * unambiguous and inert.
 *
 * @example escapeForTerminal('evil\x1b[2J') // 'evil\\x1b[2J'
 */
export function escapeForTerminal(text: string, options: { multiline?: boolean } = {}): string {
  return text.replace(/[\\\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, (c) => {
    if (c === '\\') return '\\\\'
    if (options.multiline && (c === '\n' || c === '\t')) return c
    const code = c.charCodeAt(0)
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u{${code.toString(16)}}`
  })
}
