/**
 * sshd log lines: the timestamp (syslog `Nov 22 06:16:56` or RFC 3339) and the first
 * `<address> port <n>` of the message. Pure and total: any text gives a result or undefined.
 */
import { normalizeIp } from '@gatehouse/kit/net.ts'

export interface LogLine {
  /** Epoch milliseconds. */
  time: number
  /** Normalised address the line names (the peer sshd saw). */
  ip: string
  port: number
}

/** Lines longer than this are not sshd's and are skipped. */
export const MAX_LINE = 8192

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec']
const SYSLOG = /^([A-Z][a-z]{2}) {1,2}(\d{1,2}) (\d{2}):(\d{2}):(\d{2})(?:\.\d+)? /
const RFC3339 = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?)(Z|[+-]\d{2}:?\d{2}) /

/**
 * Parse one line. Syslog timestamps carry no year or zone: they are read as UTC in the year
 * that puts them closest to `reference` (epoch ms), so December logs read in January work.
 */
export function parseLogLine(text: string, reference: number): LogLine | undefined {
  if (text.length > MAX_LINE) return undefined
  const time = timestampOf(text, reference)
  if (time === undefined) return undefined
  // Each " port <digits>" with the word before it; a linear scan (no backtracking regex on
  // text that can carry client-chosen user names).
  for (let at = text.indexOf(' port '); at !== -1; at = text.indexOf(' port ', at + 1)) {
    const digits = /^\d{1,5}(?!\d)/.exec(text.slice(at + 6, at + 12))
    const start = text.lastIndexOf(' ', at - 1) + 1
    if (!digits || start >= at || at - start > 64) continue
    const port = Number(digits[0])
    if (port > 65535) continue
    try {
      return { time, ip: normalizeIp(text.slice(start, at)), port }
    } catch {
      // not an address (e.g. "on port 22"); look further
    }
  }
  return undefined
}

function timestampOf(text: string, reference: number): number | undefined {
  const iso = RFC3339.exec(text)
  if (iso) {
    const zone = iso[2] === 'Z' ? 'Z' : `${iso[2]!.slice(0, 3)}:${iso[2]!.slice(-2)}`
    const fraction = /\.(\d+)$/.exec(iso[1]!)
    const base = fraction ? iso[1]!.replace(/\.\d+$/, `.${fraction[1]!.slice(0, 3).padEnd(3, '0')}`) : iso[1]!
    const t = Date.parse(`${base}${zone}`)
    return Number.isFinite(t) ? t : undefined
  }
  const sys = SYSLOG.exec(text)
  if (!sys) return undefined
  const month = MONTHS.indexOf(sys[1]!)
  const [day, h, m, s] = [Number(sys[2]), Number(sys[3]), Number(sys[4]), Number(sys[5])]
  if (month === -1 || day < 1 || day > 31 || h > 23 || m > 59 || s > 60) return undefined
  const year = new Date(reference).getUTCFullYear()
  let best: number | undefined
  for (const y of [year - 1, year, year + 1]) {
    const t = Date.UTC(y, month, day, h, m, s)
    if (new Date(t).getUTCDate() !== day) continue // e.g. Feb 30
    if (best === undefined || Math.abs(t - reference) < Math.abs(best - reference)) best = t
  }
  return best
}
