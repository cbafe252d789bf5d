/**
 * nginx/Apache `combined` and the vhost-prefixed variant (Apache `vhost_combined`:
 * `%v:%p %h ...`; nginx setups often log `$host %h ...`):
 *
 *   203.0.113.9 - - [10/Oct/2000:13:55:36 -0700] "GET /a.gif HTTP/1.0" 200 2326 "-" "Mozilla/4.08"
 *   www.example.org:443 203.0.113.9 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.1" 200 ...
 *
 * One anchored regex without nested quantifiers: linear time on any input (fuzzed). Escaped
 * quotes inside the request and user agent (`\"`) are accepted as nginx writes them.
 */
import { parseClfTime } from './clf-time.ts'
import type { LineParser, LogRequest } from './request.ts'

const Q = String.raw`"((?:[^"\\]|\\.)*)"`
const CORE = String.raw`(\S+) \S+ \S+ \[([^\]]{26})\] ${Q} (\d{3}) (?:\d+|-)(?: ${Q} ${Q})?`
const COMBINED = new RegExp(`^${CORE}`)
const VHOST = new RegExp(String.raw`^(\S+) ${CORE}`)

/** `GET /path HTTP/1.1` -> `/path`; a request line of garbage yields its text (still counted). */
function targetOf(request: string): string {
  const a = request.indexOf(' ')
  if (a === -1) return request
  const b = request.lastIndexOf(' ')
  return b > a ? request.slice(a + 1, b) : request.slice(a + 1)
}

/** `www.example.org:443` -> `www.example.org`; `[2001:db8::1]:80` -> `[2001:db8::1]`. */
export function hostOf(vhost: string): string | undefined {
  if (vhost === '-' || vhost === '') return undefined
  let h = vhost
  if (h.startsWith('[')) {
    const end = h.indexOf(']')
    h = end === -1 ? h : h.slice(0, end + 1)
  } else {
    const colon = h.indexOf(':')
    if (colon !== -1 && h.indexOf(':', colon + 1) === -1) h = h.slice(0, colon)
  }
  return h.toLowerCase()
}

function build(m: RegExpExecArray, offset: number, host: string | undefined): LogRequest {
  return {
    ip: m[offset + 1]!,
    host,
    timeMs: parseClfTime(m[offset + 2]!),
    target: targetOf(m[offset + 3]!),
    status: Number(m[offset + 4]),
    userAgent: m[offset + 6] ?? '',
  }
}

export const parseCombined: LineParser = (line) => {
  const m = COMBINED.exec(line)
  return m ? build(m, 0, undefined) : undefined
}

export const parseVhostCombined: LineParser = (line) => {
  const m = VHOST.exec(line)
  return m ? build(m, 1, hostOf(m[1]!)) : undefined
}
