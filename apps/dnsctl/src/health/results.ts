/**
 * The result files the refresh jobs write into the results folder (one JSON object each,
 * replaced atomically by the job). dnsctl only reads them.
 *
 * zone-transfer.json      {"finished_at", "ok", "error"?, "last_success_at"?, "earliest_rrsig_expiry"?}
 * blocklist-refresh.json  {"finished_at", "ok", "error"?, "last_success_at"?, "domain_count"?}
 * differential-check.json {"checked_at", "mismatches"}
 * Times are RFC 3339 UTC strings.
 */
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'

export interface JobResult {
  finished_at: string
  ok: boolean
  error: string | null
  last_success_at: string | null
}

export interface ZoneTransferResult extends JobResult {
  earliest_rrsig_expiry: string | null
}

export interface BlocklistRefreshResult extends JobResult {
  domain_count: number | null
}

export interface DifferentialCheckResult {
  checked_at: string
  mismatches: number
}

export type Read<T> = { state: 'missing' } | { state: 'invalid'; error: string } | { state: 'ok'; value: T }

function time(obj: Record<string, unknown>, key: string, required: boolean): string | null {
  const v = obj[key]
  if (v === undefined || v === null) {
    if (required) throw new Error(`${key} is required`)
    return null
  }
  if (typeof v !== 'string' || Number.isNaN(Date.parse(v))) throw new Error(`${key} must be an RFC 3339 time`)
  return v
}

function job(obj: Record<string, unknown>): JobResult {
  if (typeof obj.ok !== 'boolean') throw new Error('ok must be true or false')
  if (obj.error !== undefined && obj.error !== null && typeof obj.error !== 'string')
    throw new Error('error must be a string')
  return {
    finished_at: time(obj, 'finished_at', true)!,
    ok: obj.ok,
    error: (obj.error as string | undefined) ?? null,
    last_success_at: time(obj, 'last_success_at', false),
  }
}

export const PARSERS = {
  'zone-transfer.json': (o: Record<string, unknown>): ZoneTransferResult => ({
    ...job(o),
    earliest_rrsig_expiry: time(o, 'earliest_rrsig_expiry', false),
  }),
  'blocklist-refresh.json': (o: Record<string, unknown>): BlocklistRefreshResult => {
    const n = o.domain_count
    if (n !== undefined && n !== null && !(Number.isSafeInteger(n) && (n as number) >= 0)) {
      throw new Error('domain_count must be a non-negative integer')
    }
    return { ...job(o), domain_count: (n as number | undefined) ?? null }
  },
  'differential-check.json': (o: Record<string, unknown>): DifferentialCheckResult => {
    const m = o.mismatches
    if (!(Number.isSafeInteger(m) && (m as number) >= 0)) throw new Error('mismatches must be a non-negative integer')
    return { checked_at: time(o, 'checked_at', true)!, mismatches: m as number }
  },
}

/** Read and check one result file; never throws. */
export async function readResult<K extends keyof typeof PARSERS>(
  dir: string,
  file: K,
): Promise<Read<ReturnType<(typeof PARSERS)[K]>>> {
  let text: string
  try {
    text = await readFile(join(dir, file), 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { state: 'missing' }
    return { state: 'invalid', error: `cannot be read (${(err as NodeJS.ErrnoException).code})` }
  }
  try {
    const obj = JSON.parse(text) as unknown
    if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) throw new Error('must hold a JSON object')
    return { state: 'ok', value: PARSERS[file](obj as Record<string, unknown>) as ReturnType<(typeof PARSERS)[K]> }
  } catch (err) {
    return { state: 'invalid', error: (err as Error).message }
  }
}
