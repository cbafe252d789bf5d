/**
 * JSON-lines access logs (one object per line), with configurable field names so nginx
 * `log_format ... escape=json`, Caddy, Traefik and similar layouts all fit. Dotted names
 * reach into nested objects (`request.host`). Time may be RFC 3339 text, epoch seconds
 * or epoch milliseconds.
 */
import { parseClfTime } from './clf-time.ts'
import type { LineParser } from './request.ts'

export interface JsonFields {
  ip: string
  host: string
  /** The request target (path + query). */
  target: string
  /** Alternatively the whole request line (`GET /x HTTP/1.1`), used when `target` is absent. */
  request: string
  status: string
  user_agent: string
  time: string
}

export const DEFAULT_JSON_FIELDS: JsonFields = {
  ip: 'remote_addr',
  host: 'host',
  target: 'request_uri',
  request: 'request',
  status: 'status',
  user_agent: 'http_user_agent',
  time: 'time',
}

function pick(obj: Record<string, unknown>, path: string[]): unknown {
  let v: unknown = obj
  for (const p of path) {
    if (v === null || typeof v !== 'object') return undefined
    v = (v as Record<string, unknown>)[p]
  }
  return v
}

function text(v: unknown): string | undefined {
  if (typeof v === 'string') return v
  if (typeof v === 'number' && Number.isFinite(v)) return String(v)
  return undefined
}

function time(v: unknown): number {
  if (typeof v === 'number') return v > 1e12 ? v : v * 1000
  if (typeof v !== 'string') return Number.NaN
  const clf = parseClfTime(v)
  if (!Number.isNaN(clf)) return clf
  if (/^\d+(\.\d+)?$/.test(v)) return time(Number(v))
  return /^\d{4}-\d{2}-\d{2}T/.test(v) ? Date.parse(v) : Number.NaN
}

/** A parser for the given field names (missing names fall back to the defaults). */
export function jsonParser(fields: Partial<JsonFields> = {}): LineParser {
  const f = { ...DEFAULT_JSON_FIELDS, ...fields }
  const paths = Object.fromEntries(Object.entries(f).map(([k, v]) => [k, v.split('.')])) as Record<
    keyof JsonFields,
    string[]
  >
  return (line) => {
    if (line.charCodeAt(0) !== 123 /* { */) return undefined
    let obj: unknown
    try {
      obj = JSON.parse(line)
    } catch {
      return undefined
    }
    if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) return undefined
    const o = obj as Record<string, unknown>
    const ip = text(pick(o, paths.ip))
    const statusText = text(pick(o, paths.status))
    let target = text(pick(o, paths.target))
    if (target === undefined) {
      const req = text(pick(o, paths.request))
      if (req !== undefined) {
        const parts = req.split(' ')
        target = parts.length >= 2 ? parts[1]! : req
      }
    }
    if (ip === undefined || ip === '' || statusText === undefined || target === undefined) return undefined
    const status = Number(statusText)
    if (!Number.isInteger(status) || status < 100 || status > 999) return undefined
    const host = text(pick(o, paths.host))
    return {
      ip,
      host: host === undefined || host === '' || host === '-' ? undefined : host.toLowerCase(),
      target,
      status,
      userAgent: text(pick(o, paths.user_agent)) ?? '',
      timeMs: time(pick(o, paths.time)),
    }
  }
}
