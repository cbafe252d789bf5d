/**
 * Syslog envelopes around an access-log line (nginx `access_log syslog:server=...`,
 * rsyslog/journald forwarding), RFC 5424 and RFC 3164:
 *
 *   <190>1 2026-11-25T08:00:00.000Z web1 nginx - - - MESSAGE          (RFC 5424, section 6)
 *   <190>1 2026-11-25T08:00:00Z web1 nginx 12 ID47 [ex@1 a="b"] MESSAGE  (with structured data)
 *   <190>Nov 25 08:00:00 web1 nginx: MESSAGE                           (RFC 3164, section 4.1)
 *   Nov 25 08:00:00 web1 nginx[123]: MESSAGE                           (as written to files)
 *
 * `unwrapSyslog` returns the MESSAGE, or undefined when the envelope does not parse. The
 * structured-data walk is a bounded scan, never a backtracking regex.
 */

/** Skip `<PRI>` (1-3 digits); returns the index after it, or 0 when there is none, -1 when malformed. */
function skipPri(s: string): number {
  if (s.charCodeAt(0) !== 60 /* < */) return 0
  const end = s.indexOf('>')
  if (end < 2 || end > 4) return -1
  for (let i = 1; i < end; i++) {
    const c = s.charCodeAt(i)
    if (c < 48 || c > 57) return -1
  }
  return end + 1
}

/** Index after `n` space-separated fields starting at `i`, or -1. */
function skipFields(s: string, i: number, n: number): number {
  let p = i
  for (let k = 0; k < n; k++) {
    const sp = s.indexOf(' ', p)
    if (sp === -1 || sp === p) return -1
    p = sp + 1
  }
  return p
}

/** Skip RFC 5424 STRUCTURED-DATA (`-` or one or more `[...]` with quoted values); index after it or -1. */
function skipStructuredData(s: string, i: number): number {
  if (s[i] === '-') return s[i + 1] === ' ' ? i + 2 : i + 1 === s.length ? i + 1 : -1
  let p = i
  while (s[p] === '[') {
    p++
    let quoted = false
    for (; p < s.length; p++) {
      const c = s[p]
      if (quoted) {
        if (c === '\\') p++
        else if (c === '"') quoted = false
      } else if (c === '"') quoted = true
      else if (c === ']') break
    }
    if (p >= s.length) return -1
    p++
  }
  if (p === i) return -1
  return s[p] === ' ' ? p + 1 : p === s.length ? p : -1
}

const MONTH = /^(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d \d\d:\d\d:\d\d /

export function unwrapSyslog(line: string): string | undefined {
  const start = skipPri(line)
  if (start < 0) return undefined
  // RFC 5424: VERSION SP TIMESTAMP SP HOSTNAME SP APP-NAME SP PROCID SP MSGID SP SD [SP MSG]
  if (line.charCodeAt(start) >= 49 && line.charCodeAt(start) <= 57 && line[start + 1] === ' ') {
    const afterHeader = skipFields(line, start, 6)
    if (afterHeader < 0) return undefined
    const msg = skipStructuredData(line, afterHeader)
    if (msg < 0) return undefined
    // A BOM may mark UTF-8 text (section 6.4).
    return line.charCodeAt(msg) === 0xfeff ? line.slice(msg + 1) : line.slice(msg)
  }
  // RFC 3164: TIMESTAMP ("Mmm dd hh:mm:ss") SP HOSTNAME SP TAG[pid]: SP MSG
  const rest = line.slice(start)
  if (!MONTH.test(rest)) return undefined
  const afterHost = skipFields(rest, 16, 1)
  if (afterHost < 0) return undefined
  const colon = rest.indexOf(': ', afterHost)
  if (colon < 0 || colon - afterHost > 64) return undefined
  return rest.slice(colon + 2)
}
